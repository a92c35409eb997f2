package proxy_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/proxy"
)

// An exchange gives its plan's array back once it is done, streamed or
// not (plan.Plan.Release), and the array of its encoded context once
// its upstream body is built; the next exchange lays its messages out in
// them: once warm, laying out a plan and encoding it allocate next to
// nothing, where each allocated an array of the window's size on every
// request (some 450 messages, 33 KB and 11 KB, over
// BenchmarkChatPath50's window). Measured in the memory profile's bytes
// allocated under each, every allocation sampled.
func TestChatAllocPlansReuseTheirArrays(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random: counts mean nothing")
	}
	for _, up := range []instantUpstream{{"application/json", []byte(benchAnswer)}, {"text/event-stream", benchStream()}} {
		t.Run(up.contentType, func(t *testing.T) {
			recs := make(chan history.ExchangeRecord, 1)
			srv, store := benchServerWith(t, 16000, up, append(windowCaches[0].adjust, func(c *proxy.Config) { // recall serve's cache
				c.OnExchange = func(_ history.Key, r history.ExchangeRecord) { recs <- r }
			})...)
			const convs, runs = 8, 200
			prefill(t, store, convs, 50)
			reqs := make([]*fasthttp.RequestCtx, convs)
			for i := range reqs {
				reqs[i] = benchRequest(fmt.Sprintf("conv-%d", i))
			}
			messages := 0 // the plans' messages, all requests
			serve := func(i int) {
				serveOK(t, srv, reqs[i%convs])
				select {
				case r := <-recs: // the exchange is done: its plan went back
					messages += r.NewMessages
					for _, sp := range r.Included {
						messages += int(sp.To-sp.From) + 1
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("request %d: no record", i)
				}
			}
			defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
			runtime.MemProfileRate = 1
			for i := range convs { // warm: each conversation's cache entry
				serve(i)
			}
			before := layoutBytes()
			messages = 0
			for i := range runs {
				serve(i)
			}
			after := layoutBytes()
			// A plan's message is 72 bytes, an encoded one 24, and the
			// instructions are left out of the count; a pool emptied by a
			// collection, or a conversation that outgrew the arrays at
			// hand, costs one.
			for i, what := range []string{"plans", "encoded contexts"} {
				laid := after[i] - before[i]
				t.Logf("%d bytes allocated laying out %d requests' %s", laid, runs, what)
				if floor := int64(messages) * [2]int64{72, 24}[i]; laid > floor/10 {
					t.Errorf("laying out %d requests' %s allocated %d bytes, a tenth of what they hold (%d) allowed", runs, what, laid, floor)
				}
			}
		})
	}
}

// layoutBytes is the bytes allocated so far, as the memory profile has
// them after a collection, under the layout of a plan's messages and
// under the encoding of its context.
func layoutBytes() (sums [2]int64) {
	runtime.GC()
	n, _ := runtime.MemProfile(nil, true)
	recs := make([]runtime.MemProfileRecord, n+64)
	n, _ = runtime.MemProfile(recs, true)
	for _, r := range recs[:n] {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if i := slices.Index(layouts[:], f.Function); i >= 0 {
				sums[i] += r.AllocBytes
				break
			}
			if !more {
				break
			}
		}
	}
	return sums
}

// layouts are the functions layoutBytes sums under: the plan's messages
// laid out (its array), the context encoded (the array of its encoded
// messages, taken or made).
var layouts = [2]string{"github.com/recallproxy/recall/plan.(*maker).lay", "github.com/recallproxy/recall/proxy.(*exchange).encode"}
