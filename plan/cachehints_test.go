package plan_test

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
)

// A stored message is replayed without the cache hint its request
// carried; the request's own messages keep theirs.
func TestReplayedHistoryDropsCacheHints(t *testing.T) {
	ctx := context.Background()
	st := memStore(t)
	k := history.Key{Tenant: "t", Conversation: "hints"}
	pol := plan.Policy{Mode: history.Auto, Budget: 100000}
	hinted := func(text string) history.Message {
		return msg(`{"role":"user","content":[{"type":"text","text":"` + text + `","cache_control":{"type":"ephemeral"}}]}`)
	}
	send := func(in history.Message, now int64) *plan.Plan {
		t.Helper()
		p, err := plan.Make(ctx, plan.Input{Store: st, Key: k, Policy: pol, Model: "m", New: []history.Message{in}, Counter: lenCounter{}, Now: time.Unix(0, now)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := send(hinted("one"), 1)
	answer := msg(`{"role":"assistant","content":"two"}`)
	if _, err := st.Commit(ctx, k, history.Change{Version: p.Version, Append: append(slices.Clone(p.Fresh), answer), Now: 1}); err != nil {
		t.Fatal(err)
	}
	p = send(hinted("three"), 2)
	var got []string
	for _, m := range p.Messages {
		got = append(got, string(m.Raw))
	}
	want := []string{`{"role":"user","content":[{"type":"text","text":"one"}]}`, `{"role":"assistant","content":"two"}`,
		`{"role":"user","content":[{"type":"text","text":"three","cache_control":{"type":"ephemeral"}}]}`}
	if !slices.Equal(got, want) {
		t.Errorf("got messages %q, want %q", got, want)
	}
	stored, err := st.Load(ctx, k, history.Query{MinMessages: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(stored.Tail[0].Raw, []byte("cache_control")) {
		t.Errorf("stored %s, want the message as it arrived", stored.Tail[0].Raw)
	}
}
