package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/history"
)

// TestBodyFromMemory: with a body, the upstream gets it (the stream one
// for a client's body asking for a stream) whatever the client sent;
// without, the client's body.
func TestBodyFromMemory(t *testing.T) {
	var mu sync.Mutex
	var got []string
	up := serve(t, func(rc *fasthttp.RequestCtx) {
		mu.Lock()
		got = append(got, string(rc.PostBody()))
		mu.Unlock()
		rc.SetBodyString("ok")
	})
	client := &fasthttp.Client{}
	for _, c := range []struct {
		body, stream []byte
		sent, want   string
	}{
		{nil, nil, `{"a":1}`, `{"a":1}`},
		{[]byte(`{"ctx":1}`), []byte(`{"ctx":1,"stream":true}`), `{"a":1}`, `{"ctx":1}`},
		{[]byte(`{"ctx":1}`), []byte(`{"ctx":1,"stream":true}`), `{"a":1,"stream":true}`, `{"ctx":1,"stream":true}`},
	} {
		proxy := serve(t, handler(client, "http://"+up, c.body, c.stream, nil, nil, nil))
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + proxy + "/v1/chat/completions")
		req.Header.SetMethod("POST")
		req.SetBodyString(c.sent)
		if err := client.Do(req, resp); err != nil || string(resp.Body()) != "ok" {
			t.Fatalf("sent %s: %v, %q", c.sent, err, resp.Body())
		}
		mu.Lock()
		last := got[len(got)-1]
		mu.Unlock()
		if last != c.want {
			t.Errorf("sent %s: the upstream got %s, want %s", c.sent, last, c.want)
		}
	}
}

// serve serves h on a loopback port until the test ends, and returns
// its address.
func serve(t *testing.T, h fasthttp.RequestHandler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fasthttp.Server{Handler: h}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown() })
	return ln.Addr().String()
}

// TestDurableTurnsBeforeTheAnswer: with a turn log, every answered
// request's turn, its body and the answer, is in the log's file by the
// time its answer arrives, for requests sent at once too.
func TestDurableTurnsBeforeTheAnswer(t *testing.T) {
	up := serve(t, func(rc *fasthttp.RequestCtx) {
		rc.SetBodyString("answer to " + string(rc.PostBody()))
	})
	path := filepath.Join(t.TempDir(), "turns.log")
	turns, err := openTurnLog(path)
	if err != nil {
		t.Fatal(err)
	}
	client := &fasthttp.Client{}
	proxy := serve(t, handler(client, "http://"+up, nil, nil, turns, nil, nil))
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			sent := fmt.Sprintf("q%d", i)
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI("http://" + proxy + "/v1/chat/completions")
			req.Header.SetMethod("POST")
			req.SetBodyString(sent)
			if err := client.Do(req, resp); err != nil {
				errs <- err
				return
			}
			kept, err := os.ReadFile(path)
			if err != nil {
				errs <- err
				return
			}
			if want := appendTurn(nil, []byte(sent), resp.Body()); !bytes.Contains(kept, want) {
				errs <- fmt.Errorf("answered %q before the log held its turn %q", resp.Body(), want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	kept, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		sent := fmt.Sprintf("q%d", i)
		if want := appendTurn(nil, []byte(sent), []byte("answer to "+sent)); bytes.Count(kept, want) != 1 {
			t.Errorf("the log holds the turn of %s %d times, want once", sent, bytes.Count(kept, want))
		}
	}
}

// TestStoredTurnsBeforeTheAnswer: with a store, every answered request's
// turn, the client's last message and the answer's, is in its
// conversation by the time the answer arrives, in order, for two
// conversations' requests sent at once.
func TestStoredTurnsBeforeTheAnswer(t *testing.T) {
	up := serve(t, func(rc *fasthttp.RequestCtx) {
		said := gjson.GetBytes(rc.PostBody(), "messages.0.content").Str
		rc.SetBodyString(`{"choices":[{"message":{"role":"assistant","content":"re ` + said + `"}}]}`)
	})
	stored, err := openStoreTurns(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stored.s.Close() })
	client := &fasthttp.Client{}
	proxy := serve(t, handler(client, "http://"+up, nil, nil, nil, stored, nil))
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for _, conv := range []string{"a", "b"} {
		wg.Go(func() {
			for i := range n {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				req.SetRequestURI("http://" + proxy + "/v1/chat/completions")
				req.Header.SetMethod("POST")
				req.Header.Set("X-Conversation-ID", conv)
				req.SetBodyString(fmt.Sprintf(`{"messages":[{"role":"user","content":"%s%d"}]}`, conv, i))
				if err := client.Do(req, resp); err != nil {
					errs <- err
					return
				}
				var raws []string
				err := stored.s.Messages(context.Background(), history.Key{Tenant: "default", Conversation: conv}, 0, true,
					func(m history.Message) bool { raws = append(raws, string(m.Raw)); return true })
				if err != nil {
					errs <- err
					return
				}
				if len(raws) != 2*(i+1) || raws[2*i+1] != fmt.Sprintf(`{"role":"assistant","content":"re %s%d"}`, conv, i) {
					errs <- fmt.Errorf("%s: answered request %d with %d messages stored: %q", conv, i, len(raws), raws)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestBadgerTurnsBeforeTheAnswer: with a Badger database of its own,
// every answered request's turn is in it, at the conversation's next
// positions, by the time the answer arrives.
func TestBadgerTurnsBeforeTheAnswer(t *testing.T) {
	up := serve(t, func(rc *fasthttp.RequestCtx) {
		said := gjson.GetBytes(rc.PostBody(), "messages.0.content").Str
		rc.SetBodyString(`{"choices":[{"message":{"role":"assistant","content":"re ` + said + `"}}]}`)
	})
	raw, err := openBadgerTurns(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.db.Close() })
	client := &fasthttp.Client{}
	proxy := serve(t, handler(client, "http://"+up, nil, nil, nil, nil, raw))
	for i := range 4 {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + proxy + "/v1/chat/completions")
		req.Header.SetMethod("POST")
		req.Header.Set("X-Conversation-ID", "c")
		req.SetBodyString(fmt.Sprintf(`{"messages":[{"role":"user","content":"q%d"}]}`, i))
		if err := client.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		err := raw.db.View(func(txn *badger.Txn) error {
			item, err := txn.Get(messageKey("c", uint64(2*i+2)))
			if err != nil {
				return err
			}
			v, err := item.ValueCopy(nil)
			if want := fmt.Sprintf(`{"role":"assistant","content":"re q%d"}`, i); err == nil && string(v) != want {
				return fmt.Errorf("answer %d stored as %s, want %s", i, v, want)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
