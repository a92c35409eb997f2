package responses

import "testing"

// TestStreamOpeningGrowsItsBufferOnce: a stream's first events
// (response.created and response.in_progress, each with the in-progress
// Response) go into a buffer grown once, not event by event.
func TestStreamOpeningGrowsItsBufferOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	r := Ingress{}.NewRenderer(storedCases(t)[0].req).(*Renderer)
	if n := testing.AllocsPerRun(10, func() { r.started = false; r.start(nil) }); n != 1 {
		t.Errorf("the stream's opening allocates %.0f times, want 1", n)
	}
}
