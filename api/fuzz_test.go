package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
)

// FuzzImport feeds arbitrary bodies to the import parser, through the
// handler, into real Badger: it never panics, answers 201 or a 400, and a
// refused body stores nothing.
func FuzzImport(f *testing.F) {
	for _, seed := range []string{
		`{"object":"conversation.export","version":1,"id":"x","title":"","created_at":1,"cut":0,"summary":null}` + "\n" +
			`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"created_at":1,"tokens":3,"flags":[],"message":{"role":"user","content":"hi"}}` + "\n",
		`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"tokens":1,"message":{"role":"tool","tool_call_id":"x","content":"a"}}`,
		`{"object":"conversation.message","seq":2,"turn":1,"episode":1,"tokens":1,"flags":["superseded"],"message":{"role":"assistant","content":"a"}}`,
		`{"object":"conversation.export","version":1,"summary":{"text":"s","through":1}}` + "\n" +
			`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"tokens":1,"message":{"role":"user","content":"a"}}` + "\n" +
			`{"object":"conversation.message","seq":5,"turn":2,"episode":3,"tokens":1,"message":{"role":"user","content":"b"}}`,
		"[[[[[[", "", "\n\n", `{"object":"conversation.message","message":[]}`,
		// The findings of an adversarial review: a turn that wraps, a
		// token count that lies, a negative summary, times that overflow,
		// a summary claiming more turns than it covers.
		`{"object":"conversation.message","seq":1,"turn":4294967295,"episode":4294967295,"created_at":1767225600,"tokens":1,"message":{"role":"user","content":"q"}}`,
		`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"created_at":1767225600,"tokens":1,"message":{"role":"user","content":"` + strings.Repeat("x ", 5000) + `"}}`,
		`{"object":"conversation.export","version":1,"summary":{"text":"s","through":1,"turns":1,"tokens":-5}}` + "\n" +
			`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"created_at":1767225600,"tokens":1,"message":{"role":"user","content":"a"}}`,
		`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"created_at":9200000000000000000,"tokens":1,"message":{"role":"user","content":"a"}}`,
		`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"created_at":-9200000000000000000,"tokens":1,"message":{"role":"user","content":"a"}}`,
		`{"object":"conversation.export","version":1,"summary":{"text":"s","through":1,"turns":999,"tokens":5,"at":1767225600000000000}}` + "\n" +
			`{"object":"conversation.message","seq":1,"turn":1,"episode":1,"created_at":1767225600,"tokens":1,"message":{"role":"user","content":"a"}}` + "\n" +
			`{"object":"conversation.message","seq":2,"turn":1,"episode":1,"created_at":1767225600,"tokens":1,"message":{"role":"assistant","content":"b"}}`,
	} {
		f.Add(seed)
	}
	s, err := badgerstore.Open(f.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	tenant := &config.Tenant{ID: "t"}
	h, err := api.New(api.Config{Store: s, Authenticate: func(*fasthttp.RequestCtx) (auth.Caller, error) {
		return auth.Caller{Tenant: tenant, Namespace: "t"}, nil
	}})
	if err != nil {
		f.Fatal(err)
	}
	n := 0
	f.Fuzz(func(t *testing.T, body string) {
		n++
		conv := fmt.Sprint("f-", n)
		var rc fasthttp.RequestCtx
		rc.Request.Header.SetMethod("POST")
		rc.Request.SetRequestURI(api.Prefix + "conversations/" + conv + "/import")
		rc.Request.Header.SetContentType("application/x-ndjson")
		rc.Request.SetBodyString(body)
		h.Handle(&rc)
		snap, err := s.Load(context.Background(), history.Key{Tenant: "t", Conversation: conv}, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		switch status := rc.Response.StatusCode(); status {
		case 201:
			if snap.Meta.Version == 0 {
				t.Fatalf("201 but nothing stored")
			}
			// Counters are Recall's own, whatever the file claimed.
			m := snap.Meta
			if m.Tokens < 0 || m.Turns < 0 || uint64(m.LastTurn) >= m.NextSeq || (m.Summary != nil && (m.Summary.Tokens <= 0 || m.Summary.Turns > m.Turns)) {
				t.Fatalf("201 but stored counters %+v", m)
			}
		case 400:
			if snap.Meta.Version != 0 {
				t.Fatalf("400 %s but stored %+v", rc.Response.Body(), snap.Meta)
			}
		default:
			t.Fatalf("status %d %s", status, rc.Response.Body())
		}
	})
}

func TestImportRefusesASeqNearTheCounterLimit(t *testing.T) {
	s := badgertest.Open(t)
	tenant := &config.Tenant{ID: "t"}
	h, _ := api.New(api.Config{Store: s, Authenticate: func(*fasthttp.RequestCtx) (auth.Caller, error) {
		return auth.Caller{Tenant: tenant, Namespace: "t"}, nil
	}})
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod("POST")
	rc.Request.SetRequestURI(api.Prefix + "conversations/big/import")
	rc.Request.Header.SetContentType("application/x-ndjson")
	rc.Request.SetBodyString(`{"object":"conversation.message","seq":18446744073709551615,"turn":1,"episode":1,"tokens":1,"message":{"role":"user","content":"a"}}`)
	h.Handle(&rc)
	if got := rc.Response.StatusCode(); got != 400 {
		t.Errorf("got %d %s, want 400", got, rc.Response.Body())
	}
}
