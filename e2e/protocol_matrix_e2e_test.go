package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// TestProtocolMatrix: every ingress protocol over every kind of upstream,
// streamed and not: two turns, the second's answer in the client's shape
// and its upstream call carrying the first turn. The answers' text is the
// fake's echo of the last user message, whatever protocol carried it.
func TestProtocolMatrix(t *testing.T) {
	type ingress struct {
		name    string
		path    func(stream bool) string
		headers func(key string) map[string]string
		body    func(text string, stream bool) string
		text    func(body string, stream bool) string
	}
	q := func(s string) string { b := gjson.AppendJSONString(nil, s); return string(b) }
	sseText := func(body, path string) string {
		var b strings.Builder
		for _, ev := range events(body) {
			b.WriteString(ev.Get(path).Str)
		}
		return b.String()
	}
	ingresses := []ingress{
		{"chat", func(bool) string { return "/v1/chat/completions" },
			func(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} },
			func(text string, stream bool) string {
				s := `{"model":"m1","messages":[{"role":"user","content":` + q(text) + `}]`
				if stream {
					s += `,"stream":true`
				}
				return s + "}"
			},
			func(body string, stream bool) string {
				if stream {
					return sseText(body, "choices.0.delta.content")
				}
				return gjson.Get(body, "choices.0.message.content").Str
			}},
		{"responses", func(bool) string { return "/v1/responses" },
			func(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} },
			func(text string, stream bool) string {
				s := `{"model":"m1","input":` + q(text)
				if stream {
					s += `,"stream":true`
				}
				return s + "}"
			},
			func(body string, stream bool) string {
				if stream {
					var b strings.Builder
					for _, ev := range events(body) {
						if ev.Get("type").Str == "response.output_text.delta" {
							b.WriteString(ev.Get("delta").Str)
						}
					}
					return b.String()
				}
				return gjson.Get(body, `output.#(type=="message").content.0.text`).Str
			}},
		{"messages", func(bool) string { return "/v1/messages" },
			func(key string) map[string]string {
				return map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"}
			},
			func(text string, stream bool) string {
				s := `{"model":"m1","max_tokens":100,"messages":[{"role":"user","content":` + q(text) + `}]`
				if stream {
					s += `,"stream":true`
				}
				return s + "}"
			},
			func(body string, stream bool) string {
				if stream {
					return sseText(body, "delta.text")
				}
				return gjson.Get(body, "content.0.text").Str
			}},
		{"gemini", func(stream bool) string {
			if stream {
				return "/v1beta/models/m1:streamGenerateContent?alt=sse"
			}
			return "/v1beta/models/m1:generateContent"
		},
			func(key string) map[string]string { return map[string]string{"x-goog-api-key": key} },
			func(text string, _ bool) string {
				return `{"contents":[{"role":"user","parts":[{"text":` + q(text) + `}]}]}`
			},
			func(body string, stream bool) string {
				if stream {
					return sseText(body, "candidates.0.content.parts.0.text")
				}
				return gjson.Get(body, "candidates.0.content.parts.0.text").Str
			}},
	}
	h := e2etest.New(t, fourUpstreams())
	for _, up := range []string{"oa", "ch", "an", "ge"} {
		for _, in := range ingresses {
			for _, stream := range []bool{false, true} {
				name := in.name + "-over-" + up
				if stream {
					name += "-streamed"
				}
				t.Run(name, func(t *testing.T) {
					conv := "matrix-" + name
					say := func(text string) string {
						t.Helper()
						headers := in.headers("rk-" + up)
						headers["Content-Type"], headers["X-Conversation-ID"] = "application/json", conv
						r := h.PostHeaders(in.path(stream), headers, in.body(text, stream))
						if r.Status != 200 {
							t.Fatalf("%s: %d %s", text, r.Status, r.Body)
						}
						h.WaitDone(conv)
						return in.text(r.Body, stream)
					}
					if got := say("I am Ada."); got != "echo: I am Ada." {
						t.Errorf("first answer: got %q", got)
					}
					if got := say("Who am I?"); got != "echo: Who am I?" {
						t.Errorf("second answer: got %q", got)
					}
					last := h.Up.Last()
					if last.Rejected != nil {
						t.Fatalf("the fake refused %s: %s", last.Path, last.Rejected.Message)
					}
					if len(last.Messages) < 3 || !strings.Contains(string(last.Body), "I am Ada.") {
						t.Errorf("the second upstream call (%s): %s, want the first turn in it", last.Path, last.Body)
					}
				})
			}
		}
	}
}
