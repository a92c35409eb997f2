package proxy_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/summary"
)

// A compaction chained by previous_response_id takes its conversation's
// lock (and lease) to resolve it; refused after that (here: the store
// has no room), it lets them go, so that the conversation's next request
// is not kept waiting for a lock nobody holds.
func TestRefusedCompactionReleasesItsConversation(t *testing.T) {
	full := new(atomic.Bool)
	h := newHarness(t, e2etest.Options{Global: summariesOn, Summary: func(*summary.Config) {}, Proxy: noRoomWhen(full)})
	r := h.Post("/v1/responses", key, "", `{"model":"gpt-4o-mini","input":"the code word is FIG","store":true}`)
	id, conv := gjson.Get(r.Body, "id").Str, gjson.Get(r.Body, "conversation.id").Str
	if r.Status != 200 || id == "" || conv == "" {
		t.Fatalf("got %d %s, want 200 with an id and a conversation", r.Status, r.Body)
	}
	h.WaitDone(conv)
	k := history.Key{Tenant: h.PassNamespace(key), Conversation: conv}
	full.Store(true)
	// The client has the answer once the handler has returned.
	r = h.Post("/v1/responses/compact", key, "", `{"model":"gpt-4o-mini","previous_response_id":"`+id+`"}`)
	if r.Status != 507 {
		t.Fatalf("compaction: got %d %s, want 507", r.Status, r.Body)
	}
	if n := h.Server.LockRefs(k); n != 0 {
		t.Errorf("after the refused compaction, %d requests hold or wait for the conversation's lock, want none", n)
	}
}

// summariesOn turns summaries on with their trigger out of reach (no
// background job): a compaction makes the summary.
func summariesOn(g *config.Global) {
	g.Defaults.Summary.Enabled, g.Defaults.Summary.TriggerTurns = true, 100
}

// noRoomWhen makes the store refuse commits while full is set.
func noRoomWhen(full *atomic.Bool) func(*proxy.Config) {
	return func(c *proxy.Config) {
		c.CanCommit = func() error {
			if full.Load() {
				return errors.New("12 MiB free, below the 64 MiB floor")
			}
			return nil
		}
	}
}
