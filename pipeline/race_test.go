//go:build race

package pipeline

// raceEnabled reports a -race build, in which sync.Pool drops items at
// random, so pooled paths allocate more.
const raceEnabled = true
