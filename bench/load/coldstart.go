package main

import (
	"context"
	"fmt"
	"time"
)

// coldStartLimit is how long coldStart waits for a first answer.
const coldStartLimit = 60 * time.Second

// coldStart sends one request in the first seeded conversation until it is
// answered, and returns the time from started (when the server's process
// was started) to that answer: what a restarted replica costs before it
// serves a conversation from its store. Attempts that find no listener
// yet, or a server not ready, are retried every millisecond.
func coldStart(o options, started time.Time) (result, error) {
	if o.conversations <= 0 {
		return result{}, fmt.Errorf("-cold-start needs -conversations (a seeded conversation to ask in)")
	}
	d := newDriver(o)
	conv := d.conv(0)
	attempts := 0
	for {
		attempts++
		s := d.request(context.Background(), 0, time.Now(), conv)
		if s.err == nil {
			break
		}
		if time.Since(started) > coldStartLimit {
			return result{}, fmt.Errorf("-cold-start: no answer %s after the start: %v", coldStartLimit, s.err)
		}
		time.Sleep(time.Millisecond)
	}
	return result{Label: o.label, Mode: "cold", Conversations: o.conversations, Prefill: o.seeded, Stream: o.stream,
		Requests: attempts, ColdStartMs: float64(time.Since(started).Microseconds()) / 1000}, nil
}
