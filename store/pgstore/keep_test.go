package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// exchange runs one exchange on k through c, a window cache over a
// shared Store: the read takes the conversation's lease, the commit
// appends a turn saying text under it. It returns the snapshot the
// exchange planned from.
func exchange(t *testing.T, ctx context.Context, c *history.Cache, k history.Key, text string) history.Snapshot {
	t.Helper()
	var l history.ExchangeLease
	snap, err := c.Load(ctx, k, history.Query{Tokens: 1 << 20, Lease: &l})
	if err != nil || !l.Held() {
		t.Fatalf("%s: the exchange's read: lease held %v, %v", text, l.Held(), err)
	}
	v := snap.Meta.Version
	if _, err := c.Commit(ctx, k, history.Change{Version: v, Now: int64(v+1) * 1e9, Lease: &l,
		Append: []history.Message{user(text, 3), asst("ok", 1)}}); err != nil {
		t.Fatalf("%s: the exchange's commit: %v", text, err)
	}
	return snap
}

// keptPair opens two Stores on one database, a with a window cache, and
// runs one exchange on k through a, which keeps k's lease after it.
func keptPair(t *testing.T, o pgstore.Options) (a, b *pgstore.Store, ca *history.Cache, k history.Key) {
	t.Helper()
	url := pgtest.DB(t)
	a = open(t, url, o)
	b = open(t, url, pgstore.Options{})
	ca = history.NewCache(a, 0, 0)
	k = history.Key{Tenant: "t", Conversation: "kept"}
	exchange(t, testCtx(t), ca, k, "first")
	if _, ok := a.SoleFor(k); !ok {
		t.Fatal("after an exchange with another Store open: the lease is not kept")
	}
	return a, b, ca, k
}

// TestKeptLeaseLetGoWhenWanted: a Store keeps a conversation's lease
// after an exchange; another Store that asks for it (Acquire, queued)
// gets it as soon as the keeper hears of it, not once it idles out
// (30 s, past this test's deadline), and the keeper no longer trusts its
// window for the conversation, nor keeps the lease in its next commit.
func TestKeptLeaseLetGoWhenWanted(t *testing.T) {
	a, b, ca, k := keptPair(t, pgstore.Options{})
	name := history.LeaseName(history.LeaseConversation, k)
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	release, err := b.Acquire(ctx, name)
	if err != nil {
		t.Fatalf("the other Store's Acquire of a kept lease: %v", err)
	}
	if _, ok := a.SoleFor(k); ok {
		t.Error("after letting the lease go: the keeper still trusts its window")
	}
	snap, err := b.Load(ctx, k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b, k, history.Change{Version: snap.Meta.Version, Now: time.Now().UnixNano(),
		Append: []history.Message{user("the other's turn", 3)}})
	release()

	// The keeper's next exchange plans from the other's turn, and frees
	// the lease in its commit: it was wanted.
	got := exchange(t, testCtx(t), ca, k, "second")
	if last := got.Tail[len(got.Tail)-1]; !strings.Contains(string(last.Raw), "the other's turn") {
		t.Errorf("the keeper's next exchange planned from %s, want the other Store's turn last", last.Raw)
	}
	if _, ok := a.SoleFor(k); ok {
		t.Error("a lease wanted lately was kept again")
	}
}

// TestKeptLeaseFencesOtherWrites: writes of another Store that carry no
// exchange's lease (a delete, a hard forget, as the conversation API and
// retention make them) take the conversation's lease first, so the
// Store that kept it stops trusting its window before they land: its
// next read never serves what they removed.
func TestKeptLeaseFencesOtherWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, b *pgstore.Store, k history.Key)
		check func(t *testing.T, snap history.Snapshot)
	}{
		{"delete", func(t *testing.T, b *pgstore.Store, k history.Key) {
			if err := b.Delete(testCtx(t), k); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, snap history.Snapshot) {
			if snap.Meta.Version != 0 || len(snap.Tail) != 0 {
				t.Errorf("after the other Store deleted it: version %d, %d messages; want none", snap.Meta.Version, len(snap.Tail))
			}
		}},
		{"hard forget", func(t *testing.T, b *pgstore.Store, k history.Key) {
			snap, err := b.Load(testCtx(t), k, history.Query{})
			if err != nil {
				t.Fatal(err)
			}
			plan := history.PlanForget(snap.Tail, []uint64{snap.Tail[0].Seq}, true)
			commit(t, b, k, history.Change{Version: snap.Meta.Version, Now: time.Now().UnixNano(), Forget: plan})
		}, func(t *testing.T, snap history.Snapshot) {
			for _, m := range snap.Tail {
				if strings.Contains(string(m.Raw), "first") {
					t.Errorf("after the other Store erased it: the keeper served %s", m.Raw)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, ca, k := keptPair(t, pgstore.Options{})
			tc.write(t, b, k)
			if _, ok := a.SoleFor(k); ok {
				t.Error("after another Store's write: the keeper still trusts its window")
			}
			snap, err := ca.Load(testCtx(t), k, history.Query{Tokens: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, snap)
		})
	}
}

// TestKeptLeasesFreedAtClose: a Store that closes frees the leases it
// kept: another Store takes them at once.
func TestKeptLeasesFreedAtClose(t *testing.T) {
	a, b, _, k := keptPair(t, pgstore.Options{})
	name := history.LeaseName(history.LeaseConversation, k)
	cannotTake(t, testCtx(t), b, name, "b, while a keeps it")
	a.Close()
	mustTryAcquire(t, testCtx(t), b, name, "b, after a closed")()
}

// TestKeptLeaseClaimedOnce: two exchanges of the keeping Store on one
// conversation never hold its kept lease at once: the second waits for
// the first's commit, then claims the lease, and plans from that commit.
func TestKeptLeaseClaimedOnce(t *testing.T) {
	waits := make(chan string, 64)
	_, _, ca, k := keptPair(t, pgstore.Options{OnLeaseWait: sendWaits(waits)})
	ctx := testCtx(t)
	var first history.ExchangeLease
	snap, err := ca.Load(ctx, k, history.Query{Tokens: 1 << 20, Lease: &first})
	if err != nil || !first.Held() {
		t.Fatalf("the first exchange's read: held %v, %v", first.Held(), err)
	}
	second := make(chan history.Snapshot, 1)
	go func() {
		// Well before the kept lease would idle out (30 s): the second
		// claims it as soon as the first let it go.
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var l history.ExchangeLease
		s, err := ca.Load(ctx, k, history.Query{Tokens: 1 << 20, Lease: &l})
		if err != nil {
			t.Error(err)
		}
		l.Release()
		second <- s
	}()
	waited(t, ctx, waits, "the second exchange")
	v := snap.Meta.Version
	if _, err := ca.Commit(ctx, k, history.Change{Version: v, Now: int64(v+1) * 1e9, Lease: &first,
		Append: []history.Message{user("from the first", 3)}}); err != nil {
		t.Fatal(err)
	}
	got := recv(t, ctx, second, "the second exchange never read")
	if got.Meta.Version != v+1 {
		t.Errorf("the second exchange planned from version %d, want %d (the first's commit)", got.Meta.Version, v+1)
	}
}

// TestKeptLeaseWantedWithoutANotice: a Store queued for a kept lease
// whose notice the keeper never heard (its lock's connection was away,
// or the Store queues without notifying, as earlier versions do) gets
// it at the keeper's next renewal, not once it idles out.
func TestKeptLeaseWantedWithoutANotice(t *testing.T) {
	a, b, _, k := keptPair(t, pgstore.Options{})
	name := history.LeaseName(history.LeaseConversation, k)
	ctx := testCtx(t)
	// A place in the lease's queue, as takeSQL makes it, but with no
	// notice.
	if _, err := a.Pool().Exec(ctx, `INSERT INTO recall_leases (name, holder, expires_at)
		VALUES ('next ' || $1, 'an earlier replica', clock_timestamp() + interval '1 minute')`, name); err != nil {
		t.Fatal(err)
	}
	pgstore.RenewKept(a)
	if _, ok := a.SoleFor(k); ok {
		t.Error("after a renewal that found a Store queued: the keeper still trusts its window")
	}
	var holder string
	if err := b.Pool().QueryRow(ctx, `SELECT holder FROM recall_leases WHERE name = $1`, name).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if holder != "" {
		t.Errorf("after a renewal that found a Store queued: the lease is held by %q, want it free", holder)
	}
}
