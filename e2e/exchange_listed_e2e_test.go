package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/recallproxy/recall/inspect"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
)

// TestAnExchangeIsListedAsSoonAsItAnswered: the exchanges call lists the
// record of an exchange whose answer the client has, at once, although
// records are written off the request path in batches: here the writer
// never ends a batch's wait on its own, so only a read that flushes it
// finds the record. A streamed answer's client reads its last event a
// moment before the exchange hands its record over (the relay waits on
// an upstream that holds its body open past the answer): the read
// waits for that too.
func TestAnExchangeIsListedAsSoonAsItAnswered(t *testing.T) {
	held := holdingUpstream(t)
	never := make(chan time.Time) // the writer's batching delay never ends
	h := e2etest.New(t, e2etest.Options{
		Exchanges: func(o *inspect.Options) { o.After = func(time.Duration) <-chan time.Time { return never } },
		Tenants: map[string]string{
			"fake.yaml": "id: fake\napi_keys: [\"rk-fake\"]\nupstream:\n  base_url: \"{{UPSTREAM}}\"\n  api_key: \"sk-up\"\n",
			"hold.yaml": "id: hold\napi_keys: [\"rk-hold\"]\nupstream:\n  base_url: \"http://" + held + "/v1\"\n  api_key: \"sk-up\"\n  protocol: chat\n",
		},
	})
	for _, tc := range []struct {
		name, key, conv, body string
	}{
		{"answered whole", "rk-fake", "listed-1", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`},
		{"streamed, the upstream holding its body open", "rk-hold", "listed-2", `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Post("/v1/chat/completions", tc.key, tc.conv, tc.body)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			// No wait for the exchange's end: the client has its answer.
			a := h.API(tc.key, "", "GET", "/recall/v1/conversations/"+tc.conv+"/exchanges", "")
			var l exchangeList
			a.JSON(t, &l)
			if a.Status != 200 || len(l.Data) != 1 || l.Data[0].Status != "answered" {
				t.Errorf("listed right after the answer: %d, %d records %+v; want the exchange's", a.Status, len(l.Data), l.Data)
			}
			h.WaitDone(tc.conv)
		})
	}
}

// holdStream answers the one request it reads from c with a whole chat
// stream (the answer "held", its usage, [DONE]) in one chunk of a chunked
// body, without the last chunk that would end the body, and then waits
// until Recall closes the connection. It reports whether it answered.
func holdStream(c net.Conn) bool {
	r := bufio.NewReader(c)
	req, err := http.ReadRequest(r)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, req.Body)
	events := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"held"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}` + "\n\n" +
		"data: [DONE]\n\n"
	_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	_, _ = io.WriteString(c, strconv.FormatInt(int64(len(events)), 16)+"\r\n"+events+"\r\n")
	_, _ = r.ReadByte() // until Recall closes the connection
	return true
}

// holdingUpstream serves chat completions as an upstream that sends a
// streamed answer's last event and then keeps its body open until
// Recall closes the connection; it returns its address.
func holdingUpstream(t *testing.T) string {
	t.Helper()
	return upstreamtest.ServeRaw(t, func(c net.Conn) { holdStream(c) })
}
