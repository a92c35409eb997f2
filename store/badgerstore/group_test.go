package badgerstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

func userMsg(text string) history.Message {
	return history.Message{Role: wire.RoleUser, Raw: []byte(`{"role":"user","content":"` + text + `"}`), Tokens: 1}
}

// One transaction carries a group of commits, each with its own version
// check: one that fails it does not fail the others, two commits of one
// conversation see each other, and a group too big for one transaction is
// split (a single commit too big is staged).
func TestCommitGroup(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
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
	taken := s.commitGroup(reqs, commitRetries)
	if taken != 3 {
		t.Fatalf("got %d commits in the group, want 3 (the big one does not fit)", taken)
	}
	if taken = s.commitGroup(reqs[3:], commitRetries); taken != 1 {
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

// When fewer commits wait than half the last group, the committer
// gathers until as many as the last group have come (or GroupWait has
// passed) before the next sync: they share one group. A commit alone
// never waits.
func TestCommitterGathersWhileCommitsHaveCompany(t *testing.T) {
	s := openT(t, t.TempDir(), Options{GroupWait: time.Hour})
	ctx := context.Background()
	gathering := make(chan struct{}, 1)
	// armed: only the lone commit after each batch may be the held
	// gather. A batch commit held there waited for company that the test,
	// waiting for the batch, never sent (a deadlock seen in CI).
	var held, armed atomic.Bool
	s.after = func(d time.Duration) <-chan time.Time {
		if d != time.Hour {
			t.Errorf("gathered for %v, want GroupWait", d)
		}
		if armed.Load() && held.CompareAndSwap(false, true) { // the first gather never times out
			gathering <- struct{}{}
			return nil
		}
		return time.After(0)
	}
	key := func(i int) history.Key { return history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(i)} }
	var wg sync.WaitGroup
	commit := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Commit(ctx, key(i), history.Change{Append: []history.Message{textMsg("user", "q")}}); err != nil {
				t.Error(err)
			}
		}()
	}
	done := func() <-chan struct{} {
		c := make(chan struct{})
		go func() { wg.Wait(); close(c) }()
		return c
	}
	deadline := time.After(10 * time.Second)
	// Alone: the commit does not gather.
	commit(0)
	select {
	case <-done():
	case <-deadline:
		t.Fatal("a commit alone waited")
	}
	// Concurrent commits until the next one gathers.
	n := 1
gather:
	for {
		armed.Store(false)
		for range 8 {
			commit(n)
			n++
		}
		wg.Wait()
		armed.Store(true)
		commit(n)
		n++
		select {
		case <-gathering:
			break gather
		case <-done(): // it did not gather: again
		case <-deadline:
			t.Fatal("the committer never gathered")
		}
	}
	// The group being gathered takes the next last-1 commits, and goes.
	groups := s.groups.Load()
	want := int(s.lastGroup.Load())
	for range want - 1 {
		commit(n)
		n++
	}
	select {
	case <-done():
	case <-deadline:
		t.Fatalf("the gathered group did not go with %d commits", want)
	}
	if got := s.groups.Load() - groups; got != 1 {
		t.Errorf("the commit gathering and the %d after it took %d groups, want 1", want-1, got)
	}
}
