package proxy_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/config"
)

// After a hard forget of every user message, the assistant messages left
// are still sent: the context call must not report a turn "dropped for
// budget" whose messages it lists and the next chat sends.
func TestContextAfterHardForgetOfUsersDropsNothing(t *testing.T) {
	h := newHarness(t, harnessOptions{global: func(g *config.Global) { g.Defaults.Summary.Enabled = false }})
	conv := "forget-users"
	for i := 1; i <= 3; i++ {
		h.say(key, conv, fmt.Sprintf("turn %d", i))
	}
	if a := h.api(key, "", "POST", convBase+conv+"/forget", `{"instruction":"speaker:user","mode":"hard"}`); a.status != 200 {
		t.Fatalf("forget: %d %s", a.status, a.body)
	}
	a := h.api(key, "", "GET", convBase+conv+"/context?model=gpt-4o", "")
	if a.status != 200 {
		t.Fatalf("context: %d %s", a.status, a.body)
	}
	var got api.Context
	a.json(t, &got)
	ctxMsgs := make([]json.RawMessage, len(got.Messages))
	for i, m := range got.Messages {
		ctxMsgs[i] = m.Message
	}

	h.say(key, conv, "one more")
	sent := h.up.Last().Messages
	want := renderAll(sent[:len(sent)-1])
	if have := renderAll(ctxMsgs); !equalStrings(have, want) {
		t.Errorf("context call answered\n%q\nthe next request sent\n%q", have, want)
	}
	if len(want) != 3 {
		t.Errorf("the next request sent %d stored messages, want the 3 answers left", len(want))
	}
	if len(got.Dropped) != 0 {
		t.Errorf("context reports dropped %+v, want none: every stored message is sent", got.Dropped)
	}
	if got.StoredTurns != got.IncludedTurns {
		t.Errorf("context reports %d stored turns, %d included; want them equal", got.StoredTurns, got.IncludedTurns)
	}
}
