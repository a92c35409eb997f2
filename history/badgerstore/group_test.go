package badgerstore

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/recallproxy/recall/history"
)

func userMsg(text string) history.Message {
	return history.Message{Role: history.RoleUser, Raw: []byte(`{"role":"user","content":"` + text + `"}`), Tokens: 1}
}

// One transaction carries a group of commits, each with its own version
// check: one that fails it does not fail the others, two commits of one
// conversation see each other, and a group too big for one transaction is
// split (a single commit too big is staged).
func TestCommitGroup(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	key := func(i int) history.Key { return history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(i)} }
	req := func(k history.Key, version uint64, msgs ...history.Message) *commitReq {
		return &commitReq{ctx: ctx, key: k, change: history.Change{Version: version, Append: msgs, Now: 1}, done: make(chan commitRes, 1)}
	}
	big := make([]history.Message, 30000)
	for i := range big {
		big[i] = userMsg("m" + strconv.Itoa(i))
	}
	reqs := []*commitReq{
		req(key(1), 0, userMsg("a")),
		req(key(2), 7, userMsg("stale")), // wrong version
		req(key(1), 1, userMsg("b")),     // sees the first commit of the group
		req(key(3), 0, big...),           // does not fit with the others
	}
	taken := s.commitGroup(reqs)
	if taken != 3 {
		t.Fatalf("got %d commits in the group, want 3 (the big one does not fit)", taken)
	}
	if taken = s.commitGroup(reqs[3:]); taken != 1 {
		t.Fatalf("got %d commits for the big one, want 1 (staged)", taken)
	}
	wantErr := []error{nil, history.ErrConflict, nil, nil}
	wantMsgs := []int{1, 0, 2, 30000}
	for i, r := range reqs {
		res := <-r.done
		if !errors.Is(res.err, wantErr[i]) || (res.err == nil) != (wantErr[i] == nil) {
			t.Errorf("commit %d: got error %v, want %v", i, res.err, wantErr[i])
			continue
		}
		if res.err == nil && res.meta.Messages != wantMsgs[i] {
			t.Errorf("commit %d: got %d messages, want %d", i, res.meta.Messages, wantMsgs[i])
		}
	}
	for i, want := range map[int]int{1: 2, 2: 0, 3: 30000} {
		snap, err := s.Load(ctx, key(i), history.Query{MinMessages: 1 << 20})
		if err != nil || len(snap.Tail) != want {
			t.Errorf("conversation %d: got %d messages, %v; want %d", i, len(snap.Tail), err, want)
		}
	}
}
