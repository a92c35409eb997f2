// Command bareproxy is the proxy-ceiling rows' reference for Go: a
// reverse proxy on fasthttp's server and client, as Recall's path without
// history is, doing nothing else (no authentication, parsing, metrics or
// logging). Between it and nginx lies what the Go runtime's network model
// costs on the machine; between it and Recall, what Recall's own work
// costs.
//
// With -body (and -stream-body), it is the memory floor row's proxy: it
// sends that file's bytes upstream as every request's body, whatever the
// client sent, as a proxy that kept the conversation's context in memory
// and did nothing else would: between it and nginx-ctx50 lies what the
// context's second leg costs a Go proxy; between it and recall-sync, what
// keeping the conversation costs.
//
// With -durable too, it is the durable memory floor row's: each answered
// request's turn, the client's body and the answer, is appended to a file
// and fsynced (in groups) before the answer goes back, as a proxy that
// kept conversations durably and did nothing else would: between it and
// recall-sync, what Recall's own work costs beyond durability.
//
// With -store instead of -durable, each turn is committed to Recall's own
// embedded store (see storeTurns): between it and recall-sync, what
// Recall's work costs beyond forwarding and its store's commit.
//
// With -badger, each turn is written to a Badger database of bareproxy's
// own in three entries, with Badger's own durable mode (see badgerTurns):
// what Recall's store would cost on that mode, at fewer entries.
//
//	bareproxy -listen 127.0.0.1:8081 -upstream http://127.0.0.1:8080
//	bareproxy ... -body ctx50.json -stream-body ctx50-stream.json
//	bareproxy ... -body ctx50.json -durable /tmp/turns.log
//	bareproxy ... -body ctx50.json -store /tmp/store
//	bareproxy ... -body ctx50.json -badger /tmp/badger
package main

import (
	"bytes"
	"flag"
	"log"
	"os"

	"github.com/valyala/fasthttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "address to serve on")
	upstream := flag.String("upstream", "http://127.0.0.1:8080", "scheme and host requests go to")
	bodyFile := flag.String("body", "", "send this file's bytes upstream as every request's body")
	streamFile := flag.String("stream-body", "", "with -body: this one's instead for a client's body that asks for a stream (\"stream\":true)")
	durable := flag.String("durable", "", "keep each answered request's turn in this file, fsynced before the answer goes back")
	storeDir := flag.String("store", "", "keep each answered turn in Recall's embedded store in this directory, durably, before the answer goes back (the conversation is X-Conversation-ID)")
	badgerDir := flag.String("badger", "", "keep each answered turn in a Badger database of its own in this directory, durably, in three entries, before the answer goes back")
	flag.Parse()
	body, streamBody := read(*bodyFile), read(*streamFile)
	if streamBody == nil {
		streamBody = body
	}
	var turns *turnLog
	if *durable != "" {
		var err error
		if turns, err = openTurnLog(*durable); err != nil {
			log.Fatal(err)
		}
	}
	var stored *storeTurns
	if *storeDir != "" {
		var err error
		if stored, err = openStoreTurns(*storeDir); err != nil {
			log.Fatal(err)
		}
	}
	var raw *badgerTurns
	if *badgerDir != "" {
		var err error
		if raw, err = openBadgerTurns(*badgerDir); err != nil {
			log.Fatal(err)
		}
	}
	log.Fatal(fasthttp.ListenAndServe(*listen, handler(&fasthttp.Client{DisablePathNormalizing: true}, *upstream, body, streamBody, turns, stored, raw)))
}

// handler forwards each request to upstream with client; with body, it
// sends body (streamBody for a client's body that asks for a stream)
// instead of the client's; with turns, it answers once the turn is kept
// there.
func handler(client *fasthttp.Client, upstream string, body, streamBody []byte, turns *turnLog, stored *storeTurns, raw *badgerTurns) fasthttp.RequestHandler {
	return func(rc *fasthttp.RequestCtx) {
		req := fasthttp.AcquireRequest()
		defer fasthttp.ReleaseRequest(req)
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseResponse(resp)
		rc.Request.CopyTo(req)
		req.SetRequestURI(upstream + string(rc.RequestURI()))
		if body != nil {
			b := body
			if bytes.Contains(rc.PostBody(), []byte(`"stream":true`)) {
				b = streamBody
			}
			req.SetBodyRaw(b)
		}
		if err := client.Do(req, resp); err != nil {
			rc.Error(err.Error(), fasthttp.StatusBadGateway)
			return
		}
		if turns != nil {
			if err := turns.keep(rc.PostBody(), resp.Body()); err != nil {
				rc.Error(err.Error(), fasthttp.StatusInternalServerError)
				return
			}
		}
		if stored != nil {
			if err := stored.keep(string(rc.Request.Header.Peek("X-Conversation-ID")), rc.PostBody(), resp.Body()); err != nil {
				rc.Error(err.Error(), fasthttp.StatusInternalServerError)
				return
			}
		}
		if raw != nil {
			if err := raw.keep(string(rc.Request.Header.Peek("X-Conversation-ID")), rc.PostBody(), resp.Body()); err != nil {
				rc.Error(err.Error(), fasthttp.StatusInternalServerError)
				return
			}
		}
		resp.CopyTo(&rc.Response)
	}
}

// read returns the file's bytes; nil for no file.
func read(name string) []byte {
	if name == "" {
		return nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		log.Fatal(err)
	}
	return b
}
