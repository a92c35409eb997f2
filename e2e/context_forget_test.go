package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/e2etest"
)

// After a hard forget of every user message, the assistant messages left
// are still sent: the context call must not report a turn "dropped for
// budget" whose messages it lists and the next chat sends.
func TestContextAfterHardForgetOfUsersDropsNothing(t *testing.T) {
	h := e2etest.New(t, e2etest.Options{Global: func(g *config.Global) { g.Defaults.Summary.Enabled = false }})
	conv := "forget-users"
	for i := 1; i <= 3; i++ {
		h.Say(key, conv, fmt.Sprintf("turn %d", i))
	}
	if a := h.API(key, "", "POST", convBase+conv+"/forget", `{"instruction":"speaker:user","mode":"hard"}`); a.Status != 200 {
		t.Fatalf("forget: %d %s", a.Status, a.Body)
	}
	a := h.API(key, "", "GET", convBase+conv+"/context?model=gpt-4o", "")
	if a.Status != 200 {
		t.Fatalf("context: %d %s", a.Status, a.Body)
	}
	var got api.Context
	a.JSON(t, &got)
	ctxMsgs := make([]json.RawMessage, len(got.Messages))
	for i, m := range got.Messages {
		ctxMsgs[i] = m.Message
	}

	h.Say(key, conv, "one more")
	sent := h.Up.Last().Messages
	want := e2etest.RenderAll(sent[:len(sent)-1])
	if have := e2etest.RenderAll(ctxMsgs); !slices.Equal(have, want) {
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
