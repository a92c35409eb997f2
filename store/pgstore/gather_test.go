package pgstore_test

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestCommitsGatherToTheLastBatch: after a batch of six, a commit that
// finds the committer free waits for as many as that batch held, and
// goes with them in one statement; one that nothing joins goes alone
// when the group wait ends.
func TestCommitsGatherToTheLastBatch(t *testing.T) {
	ctx := testCtx(t)
	h := openHeld(t)
	armed := make(chan func(), 4) // each gather's timer, to fire
	var stops atomic.Int32
	pgstore.GatherTimer(h.Store, func(d time.Duration, f func()) func() {
		armed <- f
		return func() { stops.Add(1) }
	})
	const n = 14
	metas := make([]history.Meta, n)
	key := func(i int) history.Key { return history.Key{Tenant: "t", Conversation: fmt.Sprint("c", i)} }
	for i := range n {
		metas[i] = create(t, h.Store, key(i))
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	commit := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.Commit(ctx, key(i), plain(metas[i], 1))
		}()
	}
	gathering := func() func() {
		t.Helper()
		select {
		case f := <-armed:
			return f
		case <-time.After(time.Minute):
			t.Fatal("the committer never gathered")
			return nil
		}
	}

	// A batch of six: c1-c6, queued behind c0's.
	commit(0)
	<-h.first
	for i := 1; i <= 6; i++ {
		commit(i)
	}
	h.waitQueued(t, 6)
	close(h.release)
	wg.Wait()
	if len(armed) > 0 {
		t.Fatal("a committer gathered behind a first batch, or with a full queue")
	}

	// c7 alone waits for five more.
	commit(7)
	gathering()
	for i := 8; i <= 12; i++ {
		commit(i)
	}
	wg.Wait()
	if got := stops.Load(); got != 1 {
		t.Errorf("the gather's timer stopped %d times, want 1", got)
	}

	// c13 alone, with nobody coming: sent when the wait ends.
	commit(13)
	gathering()()
	wg.Wait()

	if want := []int{1, 6, 6, 1}; !reflect.DeepEqual(h.sizes(), want) {
		t.Errorf("batches of %v, want %v", h.sizes(), want)
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("%s: %v", key(i), errs[i])
		}
		snap, err := h.Load(ctx, key(i), history.Query{MinMessages: 100})
		if err != nil {
			t.Fatal(err)
		}
		if snap.Meta.Version != metas[i].Version+1 || len(snap.Tail) != 4 {
			t.Errorf("%s: stored version %d with %d messages, want %d with 4", key(i), snap.Meta.Version, len(snap.Tail), metas[i].Version+1)
		}
	}
}
