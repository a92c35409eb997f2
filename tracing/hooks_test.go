package tracing

import "time"

// SetRetryDelay sets the pause before an export's second attempt for a
// test, and returns what restores it.
func SetRetryDelay(d time.Duration) (restore func()) {
	old := firstRetryDelay
	firstRetryDelay = d
	return func() { firstRetryDelay = old }
}
