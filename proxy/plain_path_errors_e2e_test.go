package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/protocol/chat"
)

// A request without history is validated by chat.CheckRequest, one with
// history by chat.ParseRequest: the same bad body gets the same answer,
// status and error body, either way, and reaches neither the upstream nor
// the store.
func TestPlainPathRejectsBadBodiesAsTheRecordedPathDoes(t *testing.T) {
	h := newHarness(t, e2etest.Options{})
	const user = `{"role":"user","content":"x"}`
	bodies := []struct{ name, body string }{
		{"not JSON", `{"messages":[`},
		{"too deep", `{"messages":[` + user + `],"x":` + strings.Repeat("[", chat.MaxDepth+1) + strings.Repeat("]", chat.MaxDepth+1) + `}`},
		{"not UTF-8", `{"messages":[{"role":"user","content":"` + "\xff" + `"}]}`},
		{"not an object", `[1]`},
		{"no messages", `{"model":"gpt-4o"}`},
		{"empty messages", `{"messages":[]}`},
		{"unknown role", `{"messages":[{"role":"function","content":"x"}]}`},
		{"user without content", `{"messages":[{"role":"user"}]}`},
		{"tool without its call id", `{"messages":[{"role":"tool","content":"r"}]}`},
		{"model a number", `{"model":4,"messages":[` + user + `]}`},
		{"stream a string", `{"stream":"yes","messages":[` + user + `]}`},
		{"model twice", `{"model":"a","model":"b","messages":[` + user + `]}`},
		{"trailing comma", `{"messages":[` + user + `,]}`},
	}
	for i, tt := range bodies {
		t.Run(tt.name, func(t *testing.T) {
			conv := fmt.Sprintf("bad-plain-%d", i)
			sent := h.Up.Count()
			plain := h.Post("/v1/chat/completions", key, "", tt.body)
			recorded := h.Post("/v1/chat/completions", key, conv, tt.body)
			if plain.Status != 400 || plain.Status != recorded.Status || plain.Body != recorded.Body {
				t.Errorf("without history got %d %s\nwith history got %d %s\nwant the same 400 both ways",
					plain.Status, plain.Body, recorded.Status, recorded.Body)
			}
			if n := h.Up.Count() - sent; n != 0 {
				t.Errorf("the upstream got %d requests, want none", n)
			}
			if n := len(h.Stored(h.PassNamespace(key), conv)); n != 0 {
				t.Errorf("%d messages stored, want none", n)
			}
		})
	}
}
