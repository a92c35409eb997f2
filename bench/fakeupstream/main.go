// Command fakeupstream serves the upstreamtest fake OpenAI-compatible
// upstream on a chosen address, with instant replies and no request log, for
// Recall's load script:
//
//	go run ./bench/fakeupstream -listen 127.0.0.1:9801
//
// Point Recall's upstream at http://127.0.0.1:9801/v1. It runs until
// interrupted. It answers "echo: " and the last user message; with
// -describe it adds what it received ("[received 3 messages: user,
// assistant, user]"), which shows Recall's memory at work.
//
// With -control it also serves two paths for tests that drive it from
// another process (the Node SDK suite in e2e/): POST /_fake/reply queues a
// scripted reply for the next chat completion (an upstreamtest.Reply as
// JSON, such as {"toolCalls":[{"name":"f","arguments":"{}"}]}; it answers
// the next chat completion, Responses or Messages call), GET /_fake/last
// answers the last chat-completions request as the fake received it:
// {"model","stream","messages","body","headers"} (with ?path=/v1/responses
// or ?path=/v1/messages, the last request to that path), and GET
// /_fake/requests answers every recorded request of any path, oldest
// first (with ?from=n, those after the first n kept), as
// [{"method","path","query","header","body","rejected","websocket","at"}]
// (body as the JSON it was when it is JSON, else a string; rejected is
// the error message the fake answered 400 with, or absent; websocket is
// true for a response.create message on a WebSocket of /v1/responses;
// at is when it arrived).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/recallproxy/recall/internal/upstreamtest"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9801", "address to listen on")
	keep := flag.Int("keep", 0, "requests to keep in the in-memory log (0: none; keep it 0 under load)")
	control := flag.Bool("control", false, "serve /_fake/reply and /_fake/last for tests (keeps the last 64 requests unless -keep says otherwise)")
	describe := flag.Bool("describe", false, "say in each answer how many messages of which roles the request carried")
	toolsOnly := flag.Bool("tool-calls-for-tools", false, "give a scripted reply that calls tools only to a request that offers tools (an agent's side calls come between)")
	fast := flag.Bool("fast", false, "answer chat completions, Messages and Responses at once without validating them (the load script's rows: see fast.go); other paths stay strict")
	flag.Parse()

	if *control && *keep == 0 {
		*keep = 64
	}
	opts := []upstreamtest.Option{upstreamtest.WithKeepRequests(*keep)}
	if *describe {
		opts = append(opts, upstreamtest.WithDescribe())
	}
	if *toolsOnly {
		opts = append(opts, upstreamtest.WithToolCallsForTools())
	}
	if *fast && !*control {
		s, err := upstreamtest.Listen("127.0.0.1:0", opts...) // the strict fake, for every other path
		if err != nil {
			fail(err)
		}
		defer s.Close()
		serve(*listen, fastAnswers(s.Handler()))
		return
	}
	if !*control {
		s, err := upstreamtest.Listen(*listen, opts...)
		if err != nil {
			fail(err)
		}
		fmt.Fprintln(os.Stderr, "fakeupstream: serving", s.URL())
		waitSignal()
		s.Close()
		return
	}

	// The fake listens on a port of its own that nothing uses: its handler
	// is served here, behind the control paths.
	s, err := upstreamtest.Listen("127.0.0.1:0", opts...)
	if err != nil {
		fail(err)
	}
	defer s.Close()
	serve(*listen, withControl(s))
}

// serve serves h on addr until interrupted.
func serve(addr string, h http.Handler) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fail(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fail(err)
		}
	}()
	fmt.Fprintf(os.Stderr, "fakeupstream: serving http://%s/v1\n", ln.Addr())
	waitSignal()
	srv.Close()
}

// withControl serves /_fake/reply and /_fake/last, and s for every other path.
func withControl(s *upstreamtest.Server) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /_fake/reply", func(w http.ResponseWriter, r *http.Request) {
		var reply upstreamtest.Reply
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(body, &reply)
		}
		if err != nil {
			http.Error(w, "fakeupstream: want an upstreamtest.Reply as JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.Enqueue(reply)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /_fake/last", func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Query().Get("path")
		if path == "" {
			path = "/v1/chat/completions"
		}
		reqs := s.Requests()
		for i := len(reqs) - 1; i >= 0; i-- {
			if q := reqs[i]; q.Path == path {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(lastRequest(q))
				return
			}
		}
		http.Error(w, "fakeupstream: no request to "+path+" yet", http.StatusNotFound)
	})
	mux.HandleFunc("GET /_fake/requests", func(w http.ResponseWriter, r *http.Request) {
		reqs := s.Requests()
		if from, err := strconv.Atoi(r.URL.Query().Get("from")); err == nil && from > 0 {
			reqs = reqs[min(from, len(reqs)):]
		}
		out := make([]upstreamtest.Recorded, 0, len(reqs))
		for _, q := range reqs {
			out = append(out, q.Record())
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.Handle("/", s.Handler())
	return mux
}

// lastRequest is what GET /_fake/last answers about a request: its model,
// stream flag and messages (chat messages, Responses input items or
// Anthropic messages, as upstreamtest.Received parses them), its whole
// body when it is JSON, and its headers (the first value of each, by
// lowercase name).
func lastRequest(q upstreamtest.Received) map[string]any {
	out := map[string]any{"model": q.Model, "stream": q.Stream, "messages": q.Messages}
	if json.Valid(q.Body) {
		out["body"] = json.RawMessage(q.Body)
	}
	headers := make(map[string]string, len(q.Header))
	for name, v := range q.Header {
		headers[strings.ToLower(name)] = v[0]
	}
	out["headers"] = headers
	return out
}

func waitSignal() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fakeupstream:", err)
	os.Exit(1)
}
