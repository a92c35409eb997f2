package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/recallproxy/recall/internal/e2etest"
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
		erase      func(h *e2etest.Harness, conv string)
		// reuse chats on the id again after the erasure.
		reuse bool
	}{
		{"delete, then the id reused", "race-delete", func(h *e2etest.Harness, conv string) {
			if a := h.API(key, "", "DELETE", convBase+conv, ""); a.Status != 200 {
				t.Fatalf("delete: %d %s", a.Status, a.Body)
			}
		}, true},
		{"hard forget", "race-forget", func(h *e2etest.Harness, conv string) {
			if a := h.API(key, "", "POST", convBase+conv+"/forget", `{"instruction":"before:turn_2","mode":"hard"}`); a.Status != 200 {
				t.Fatalf("forget: %d %s", a.Status, a.Body)
			}
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := e2etest.New(t, e2etest.Options{Global: summaryOn(2, 1), Summary: func(*summary.Config) {}})
			conv := tt.conv
			c := h.Client(key, conv)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			say := func(text string) {
				t.Helper()
				if _, err := c.Chat.Completions.New(ctx, e2etest.ChatParams(openai.UserMessage(text))); err != nil {
					t.Fatalf("%s: %v", text, err)
				}
			}
			h.Up.EnqueueSummary(upstreamtest.Reply{Hold: true})
			// Three turns cross the trigger (2): the job covers the first
			// two, the vault code among them, and waits in the summariser.
			say("the vault code is 4711")
			say("second turn")
			say("third turn")
			if err := h.Up.WaitStalled(ctx, 1); err != nil {
				t.Fatal(err)
			}
			tt.erase(h, conv)
			if tt.reuse {
				// Two turns: more messages than the job covered, fewer
				// turns than the trigger.
				say("fresh one")
				say("fresh two")
			}
			h.Up.Release()
			if d := h.WaitJob(conv); d.Outcome != summary.Stale {
				t.Errorf("the job's outcome is %v, want stale", d.Outcome)
			}

			m := h.Meta(h.PassNamespace(key), conv)
			if m.Summary != nil {
				t.Errorf("stored summary %q, want none", m.Summary.Text)
			}
			if a := h.API(key, "", "GET", convBase+conv, ""); strings.Contains(string(a.Body), "4711") {
				t.Errorf("the API shows the erased text: %s", a.Body)
			}
			say("what do you remember")
			sent := strings.Join(e2etest.RenderAll(lastChat(h.Up).Messages), "\n")
			if strings.Contains(sent, "4711") {
				t.Errorf("the erased text was sent upstream:\n%s", sent)
			}
			want := []string{"user:third turn"}
			if tt.reuse {
				want = []string{"user:fresh one", "user:fresh two"}
			}
			for _, w := range want {
				if !strings.Contains(sent, w) {
					t.Errorf("sent upstream:\n%s\nwant %q among it (%s)", sent, w, fmt.Sprint(e2etest.Active(h.Stored(h.PassNamespace(key), conv))))
				}
			}
		})
	}
}
