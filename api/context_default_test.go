package api_test

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
)

// A handler built without a Context function serves the context call
// itself, as the chat path would plan the next request: no wiring is
// needed for it.
func TestContextCallNeedsNoWiring(t *testing.T) {
	s := badgertest.Open(t)
	tenant := &config.Tenant{ID: "t", Policy: config.DefaultGlobal().Defaults}
	h, err := api.New(api.Config{Store: s, Authenticate: func(*fasthttp.RequestCtx) (auth.Caller, error) {
		return auth.Caller{Tenant: tenant, Namespace: "t"}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	f := &importFixture{t: t, s: s, h: h}
	status, body := f.call("POST", "conversations/c/messages", "application/json",
		`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`)
	if status != 201 {
		t.Fatalf("memorize: got %d %s, want 201", status, body)
	}
	status, body = f.call("GET", "conversations/c/context?model=gpt-4o", "", "")
	var x api.Context
	if err := json.Unmarshal(body, &x); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if status != 200 || x.Object != "context" || len(x.Messages) != 2 || x.Budget != plan.DefaultBudget("gpt-4o", nil, 0) {
		t.Errorf("got %d %s, want 200 with both messages within the default budget", status, body)
	}
}
