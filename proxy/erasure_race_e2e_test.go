package proxy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/summary"
)

// A delete or hard forget that lands while a summary job waits for the
// summariser wins: the job's summary (made of the erased text) is
// discarded, never shown by the API or sent upstream, and a conversation
// that reuses the id keeps every one of its own turns.
func TestErasureRacingASlowSummariser(t *testing.T) {
	for _, tt := range []struct {
		name, conv string
		erase      func(h *harness, conv string)
		// reuse chats on the id again after the erasure.
		reuse bool
	}{
		{"delete, then the id reused", "race-delete", func(h *harness, conv string) {
			if a := h.api(key, "", "DELETE", convBase+conv, ""); a.status != 200 {
				t.Fatalf("delete: %d %s", a.status, a.body)
			}
		}, true},
		{"hard forget", "race-forget", func(h *harness, conv string) {
			if a := h.api(key, "", "POST", convBase+conv+"/forget", `{"instruction":"before:turn_2","mode":"hard"}`); a.status != 200 {
				t.Fatalf("forget: %d %s", a.status, a.body)
			}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{global: summaryOn(2, 1), summary: func(*summary.Config) {}})
			conv := tt.conv
			c := h.client(key, conv)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			say := func(text string) {
				t.Helper()
				if _, err := c.Chat.Completions.New(ctx, params(openai.UserMessage(text))); err != nil {
					t.Fatalf("%s: %v", text, err)
				}
			}
			h.up.EnqueueSummary(upstreamtest.Reply{Hold: true})
			// Three turns cross the trigger (2): the job covers the first
			// two, the vault code among them, and waits in the summariser.
			say("the vault code is 4711")
			say("second turn")
			say("third turn")
			if err := h.up.WaitStalled(ctx, 1); err != nil {
				t.Fatal(err)
			}
			tt.erase(h, conv)
			if tt.reuse {
				// Two turns: more messages than the job covered, fewer
				// turns than the trigger.
				say("fresh one")
				say("fresh two")
			}
			h.up.Release()
			if d := h.waitJob(conv); d.Outcome != summary.Stale {
				t.Errorf("the job's outcome is %v, want stale", d.Outcome)
			}

			m := h.meta(h.passNamespace(key), conv)
			if m.Summary != nil {
				t.Errorf("stored summary %q, want none", m.Summary.Text)
			}
			if a := h.api(key, "", "GET", convBase+conv, ""); strings.Contains(string(a.body), "4711") {
				t.Errorf("the API shows the erased text: %s", a.body)
			}
			say("what do you remember")
			sent := strings.Join(renderAll(lastChat(h.up).Messages), "\n")
			if strings.Contains(sent, "4711") {
				t.Errorf("the erased text was sent upstream:\n%s", sent)
			}
			want := []string{"user:third turn"}
			if tt.reuse {
				want = []string{"user:fresh one", "user:fresh two"}
			}
			for _, w := range want {
				if !strings.Contains(sent, w) {
					t.Errorf("sent upstream:\n%s\nwant %q among it (%s)", sent, w, fmt.Sprint(active(h.stored(h.passNamespace(key), conv))))
				}
			}
		})
	}
}
