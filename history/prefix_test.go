package history_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/badgerstore"
)

// prefixStability simulates a long conversation through the real store,
// persisting each request's cut point as the proxy does, and returns the
// fraction of consecutive requests whose context starts with the previous
// request's whole context (what a provider's prompt cache can reuse).
func prefixStability(t *testing.T, lowWater float64) float64 {
	t.Helper()
	ctx := context.Background()
	st, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := history.Key{Tenant: "t", Conversation: "long"}
	r := rand.New(rand.NewPCG(7, 7))
	const turns, turnTokens = 300, 250
	req := request{mode: history.Auto, budget: 20 * turnTokens, fixed: 100, strategy: history.TokenBudget{LowWater: lowWater}}

	var prev []history.Message
	stable, pairs := 0, 0
	send := func(in []history.Message, answer history.Message) {
		req.in = in
		o, err := curate(ctx, st, k, req)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil {
			pairs++
			if hasPrefix(o.sent, prev) {
				stable++
			}
		}
		prev = o.sent
		if _, err := commit(ctx, st, k, o, answer, int64(pairs+1)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range turns {
		n := strconv.Itoa(i)
		u := history.Tok(history.User("question "+n), 20+r.IntN(60))
		if i%4 == 3 { // a turn with a tool call: two requests
			id := "call_" + n
			send([]history.Message{u}, history.Tok(history.Calls("", id), 30))
			send([]history.Message{history.Tok(history.Tool(id, "result "+n), 50+r.IntN(100))}, history.Tok(history.Asst("answer "+n), 40+r.IntN(80)))
			continue
		}
		send([]history.Message{u}, history.Tok(history.Asst("answer "+n), 100+r.IntN(200)))
	}
	return float64(stable) / float64(pairs)
}

func hasPrefix(msgs, prefix []history.Message) bool {
	if len(prefix) > len(msgs) {
		return false
	}
	for i := range prefix {
		if !bytes.Equal(msgs[i].Raw, prefix[i].Raw) {
			return false
		}
	}
	return true
}

func TestPrefixStability(t *testing.T) {
	stepped := prefixStability(t, 0.7)
	sliding := prefixStability(t, 1)
	t.Logf("requests whose context extends the previous one: stepped (low water 0.7) %.3f, sliding (low water 1) %.3f", stepped, sliding)
	if stepped <= 0.8 {
		t.Errorf("got stepped prefix stability %.3f, want > 0.8", stepped)
	}
	if stepped <= sliding {
		t.Errorf("got stepped %.3f <= sliding %.3f, want stepped higher", stepped, sliding)
	}
}
