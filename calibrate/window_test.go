package calibrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/recallproxy/recall/calibrate"
	"github.com/recallproxy/recall/history"
)

func TestWindowFromError(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want int
	}{
		{"openai", `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, 128000},
		{"vllm", `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400}`, 4096},
		{"anthropic", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215123 tokens > 200000 maximum"}}`, 200000},
		{"gemini", `{"error":{"code":400,"message":"The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`, 1048576},
		{"llama.cpp", `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`, 8192},
		{"responses: no number", `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, 0},
		{"another error", `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error"}}`, 0},
		{"not json", `Bad Request`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := calibrate.WindowFromError([]byte(tc.body))
			if got != tc.want || ok != (tc.want > 0) {
				t.Errorf("got %d, %v, want %d", got, ok, tc.want)
			}
		})
	}
}

// A window learned from an upstream's refusal is served with the ratio,
// kept per tenant and model, written with the calibrations and read back
// by a new Calibrator; a learned window alone leaves the ratio at 1.
func TestLearnedWindowPersists(t *testing.T) {
	ctx := context.Background()
	st := &memStore{by: map[string][]history.Calibration{}}
	c := calibrate.New(calibrate.Options{Store: st, Interval: time.Hour})
	if c.LearnWindow("t", "m", 100) {
		t.Error("a window under MinWindow was taken")
	}
	if !c.LearnWindow("t", "m", 8192) {
		t.Fatal("the window was not taken")
	}
	if r, w := c.Learned("t", "m"); r != 1 || w != 8192 {
		t.Errorf("got ratio %v window %d, want 1 and 8192", r, w)
	}
	if _, w := c.Learned("t2", "m"); w != 0 {
		t.Errorf("another tenant got window %d, want none", w)
	}
	for range 4 {
		c.Observe("t", "m", 1000, 1300)
	}
	closeFlushed(t, ctx, c)
	d := loaded(t, ctx, st)
	if r, w := d.Learned("t", "m"); w != 8192 || r < 1.29 || r > 1.31 {
		t.Errorf("after loading: got ratio %v window %d, want 1.3 and 8192", r, w)
	}
	// A window learned before any sample comes back too.
	e := calibrate.New(calibrate.Options{Store: st, Interval: time.Hour})
	e.LearnWindow("t3", "llama", 4096)
	closeFlushed(t, ctx, e)
	f := loaded(t, ctx, st)
	if r, w := f.Learned("t3", "llama"); r != 1 || w != 4096 {
		t.Errorf("a window alone after loading: got ratio %v window %d, want 1 and 4096", r, w)
	}
}
