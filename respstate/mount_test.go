package respstate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/convlock"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/respstate"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
)

// newState is a State on real Badger in t.TempDir(), on a fixed clock,
// with nothing of a server around it.
func newState(t *testing.T, now time.Time) *respstate.State {
	t.Helper()
	st := badgertest.Open(t)
	s, err := respstate.New(respstate.Config{Store: st, Lock: (&convlock.Table{}).Acquire, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve runs one request through s as the mounting server hands it over:
// the body read, the caller authenticated.
func serve(s *respstate.State, c respstate.Caller, method, uri, body string) (*fasthttp.RequestCtx, error) {
	rc := &fasthttp.RequestCtx{}
	rc.Request.Header.SetMethod(method)
	rc.Request.SetRequestURI(uri)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rc, s.Serve(ctx, rc, c, rc.Request.URI().Path(), []byte(body))
}

// TestStateServesWithoutTheProxy: the state routes need nothing but
// their Config and the caller the mounting server passes: a
// conversation made through them is listed to its namespace only, and
// what no route serves is an error for the server to render, with the
// Allow header a 405 takes.
func TestStateServesWithoutTheProxy(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newState(t, now)
	alice := respstate.Caller{Namespace: "alice"}
	rc, err := serve(s, alice, "POST", "/v1/conversations", `{"items":[{"role":"user","content":"hi"}],"metadata":{"k":"v"}}`)
	conv := gjson.GetBytes(rc.Response.Body(), "id").Str
	if err != nil || rc.Response.StatusCode() != 200 || conv == "" ||
		gjson.GetBytes(rc.Response.Body(), "created_at").Int() != now.Unix() {
		t.Fatalf("create: got %v %d %s, want 200, an id, created_at %d", err, rc.Response.StatusCode(), rc.Response.Body(), now.Unix())
	}
	rc, err = serve(s, alice, "GET", "/v1/conversations/"+conv+"/items?order=asc", "")
	if got := gjson.GetBytes(rc.Response.Body(), "data.0.content.0.text").Str; err != nil || got != "hi" {
		t.Errorf("items: got %v %s, want the item hi", err, rc.Response.Body())
	}
	item := gjson.GetBytes(rc.Response.Body(), "data.0.id").Str
	bob := respstate.Caller{Namespace: "bob"}

	tests := []struct {
		name              string
		c                 respstate.Caller
		method, uri, body string
		want              *apierr.Error // nil: any 400
		allow             string        // Allow's header for a 405
	}{
		{"another namespace", bob, "GET", "/v1/conversations/" + conv, "", apierr.ConversationNotFound, ""},
		{"another namespace's metadata update", bob, "POST", "/v1/conversations/" + conv, `{"metadata":{"k":"w"}}`, apierr.ConversationNotFound, ""},
		{"another namespace's delete of an item", bob, "DELETE", "/v1/conversations/" + conv + "/items/" + item, "", apierr.ConversationNotFound, ""},
		{"another namespace's delete", bob, "DELETE", "/v1/conversations/" + conv, "", apierr.ConversationNotFound, ""},
		{"a method the items do not take", alice, "PUT", "/v1/conversations/" + conv + "/items", "", apierr.MethodNotAllowed, "GET, POST"},
		{"a method input items do not take", alice, "POST", "/v1/responses/resp_x/input_items", "", apierr.MethodNotAllowed, "GET"},
		{"a response Recall did not mint", alice, "GET", "/v1/responses/resp_x", "", apierr.ResponseNotFound, ""},
		{"a path of no state route", alice, "GET", "/v1/models", "", apierr.NotFound, ""},
		{"bad metadata", alice, "POST", "/v1/conversations/" + conv, `{"metadata":{"k":1}}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, err := serve(s, tt.c, tt.method, tt.uri, tt.body)
			if tt.want == nil {
				var ae *apierr.Error
				if !errors.As(err, &ae) || ae.Status != 400 {
					t.Fatalf("got %v, want a 400", err)
				}
			} else if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if len(rc.Response.Body()) > 0 {
				t.Errorf("answered %s: an error is the server's to render", rc.Response.Body())
			}
			if tt.allow != "" {
				if got := respstate.Allow(rc.Request.URI().Path()); got != tt.allow {
					t.Errorf("Allow: got %q, want %q", got, tt.allow)
				}
			}
		})
	}
	rc, _ = serve(s, alice, "GET", "/v1/conversations/"+conv, "")
	if got := gjson.GetBytes(rc.Response.Body(), "metadata.k").Str; got != "v" {
		t.Errorf("metadata after a refused update: got %s, want k: v", rc.Response.Body())
	}
	rc, _ = serve(s, alice, "GET", "/v1/conversations/"+conv+"/items", "")
	if got := gjson.GetBytes(rc.Response.Body(), "data.#").Int(); got != 1 {
		t.Errorf("items after refused deletes: got %s, want the one item", rc.Response.Body())
	}
}

// TestNewNeedsStoreAndLock: a State with no store, or no lock to share
// with the exchanges, is refused rather than serving unlocked.
func TestNewNeedsStoreAndLock(t *testing.T) {
	st := badgertest.Open(t)
	for name, c := range map[string]respstate.Config{
		"no store": {Lock: (&convlock.Table{}).Acquire},
		"no lock":  {Store: st},
	} {
		if _, err := respstate.New(c); err == nil {
			t.Errorf("%s: got a State, want an error", name)
		}
	}
}
