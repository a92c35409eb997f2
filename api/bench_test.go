package api_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/wire"
)

// benchStore opens a Badger store in a temporary directory and fills
// namespace "t" with convs conversations of perConv messages each (words
// drawn from a small vocabulary, so searches have work to do).
func benchStore(b *testing.B, convs, perConv int) *badgerstore.Store {
	b.Helper()
	dir, err := os.MkdirTemp("", "recall-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	s, err := badgerstore.Open(dir, badgerstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	words := []string{"kiwi", "lisbon", "invoice", "deploy", "weather", "budget", "tokens", "summary", "zebra", "garden", "python", "golang"}
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range convs {
		msgs := make([]history.Message, perConv)
		for j := range msgs {
			role := wire.RoleUser
			if j%2 == 1 {
				role = wire.RoleAssistant
			}
			text := fmt.Sprintf("%s %s and %s, item %d", words[(i+j)%len(words)], words[(i*7+j)%len(words)], words[(i*3+j*5)%len(words)], i*perConv+j)
			raw := []byte(`{"role":"` + role + `","content":"` + text + `"}`)
			msgs[j] = history.Message{Role: role, Raw: raw, Tokens: 12, Hash: uint64(i*perConv + j + 1)}
		}
		k := history.Key{Tenant: "t", Conversation: fmt.Sprintf("conv-%06d", i)}
		if _, err := s.Commit(ctx, k, history.Change{Append: msgs, Now: t0.Add(time.Duration(i) * time.Second).UnixNano()}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func benchHandler(b *testing.B, s history.Store) *api.Handler {
	tenant := &config.Tenant{ID: "t"}
	h, err := api.New(api.Config{Store: s, Authenticate: func(*fasthttp.RequestCtx) (auth.Caller, error) {
		return auth.Caller{Tenant: tenant, Namespace: "t"}, nil
	}})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

// serve runs one GET through the handler, in process, and checks it.
// benchURI is a sub-benchmark: the call it serves.
type benchURI struct{ name, uri string }

// benchURIs runs a sub-benchmark for each of calls, serving its URI.
func benchURIs(b *testing.B, h *api.Handler, calls []benchURI) {
	for _, bc := range calls {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve(b, h, bc.uri)
			}
		})
	}
}

func serve(b *testing.B, h *api.Handler, uri string) {
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("GET")
	rc.Request.SetRequestURI(uri)
	h.Handle(&rc)
	if rc.Response.StatusCode() != 200 {
		b.Fatalf("%s: %d %s", uri, rc.Response.StatusCode(), rc.Response.Body())
	}
}

// BenchmarkList is one page of 20 from a tenant with 100,000
// conversations: the first page, and one deep in the listing.
func BenchmarkList(b *testing.B) {
	s := benchStore(b, 100_000, 2)
	benchURIs(b, benchHandler(b, s), []benchURI{
		{"first-page", "/recall/v1/conversations?limit=20"},
		{"after-50000", "/recall/v1/conversations?limit=20&after=conv-050000"},
	})
}

// BenchmarkSearch ranks 10,000 messages (1,000 conversations of 10) for a
// tenant-wide query and within one conversation.
func BenchmarkSearch(b *testing.B) {
	s := benchStore(b, 1_000, 10)
	benchURIs(b, benchHandler(b, s), []benchURI{
		{"tenant-1-term", "/recall/v1/search?q=zebra&limit=20"},
		{"tenant-2-terms", "/recall/v1/search?q=kiwi+deploy&limit=20"},
		{"conversation", "/recall/v1/conversations/conv-000500/search?q=kiwi+deploy"},
	})
}
