package badgerstore

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// Once a group has had company, the committer gathers commits for
// GroupWait before the next sync: every commit that arrives meanwhile
// goes in that one group. A commit alone never waits.
func TestCommitterGathersWhileCommitsHaveCompany(t *testing.T) {
	s := openT(t, t.TempDir(), Options{GroupWait: time.Hour})
	ctx := context.Background()
	slept, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	s.sleep = func(d time.Duration) {
		if d != time.Hour {
			t.Errorf("gathered for %v, want GroupWait", d)
		}
		if held.CompareAndSwap(false, true) { // the first wait is held; later ones pass
			slept <- struct{}{}
			<-release
		}
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
	// Alone: the commit is not held (held, it would never return).
	commit(0)
	wg.Wait()
	if held.Load() {
		t.Fatal("a commit alone waited")
	}
	// Concurrent commits until a group has had company and the next one
	// gathers.
	deadline := time.After(10 * time.Second)
	n := 1
gathering:
	for {
		for range 8 {
			commit(n)
			n++
		}
		wg.Wait()
		alone := make(chan struct{})
		go func(i int) {
			defer close(alone)
			if _, err := s.Commit(ctx, key(i), history.Change{Append: []history.Message{textMsg("user", "q")}}); err != nil {
				t.Error(err)
			}
		}(n)
		n++
		select {
		case <-slept:
			wg.Add(1)
			go func() { <-alone; wg.Done() }()
			break gathering
		case <-alone: // it went alone: again
		case <-deadline:
			t.Fatal("the committer never gathered")
		}
	}
	// Held while gathering: these queue, then share one group.
	groups := s.groups.Load()
	for range 10 {
		commit(n)
		n++
	}
	for len(s.commits) < 10 {
		select {
		case <-deadline:
			t.Fatalf("%d commits queued, want 10", len(s.commits))
		default:
			runtime.Gosched()
		}
	}
	close(release)
	wg.Wait()
	if got := s.groups.Load() - groups; got != 1 {
		t.Errorf("the commit being gathered and the 10 queued meanwhile took %d groups, want 1", got)
	}
}
