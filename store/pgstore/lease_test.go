package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestLeaseExclusive: a held lease is not taken by another store until
// released; then it is.
func TestLeaseExclusive(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	a, b := open(t, url, pgstore.Options{}), open(t, url, pgstore.Options{})
	release := mustTryAcquire(t, ctx, a, "conv:t/c", "the first")
	cannotTake(t, ctx, b, "conv:t/c", "another store")
	cannotTake(t, ctx, a, "conv:t/c", "its own store")
	mustTryAcquire(t, ctx, b, "conv:t/other", "another name")()
	got := make(chan error, 1)
	go func() {
		r, err := b.Acquire(ctx, "conv:t/c")
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	release() // a second call does nothing
	if err := <-got; err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
}

// TestLeaseOutlivesNoLiveHolder: a holder that keeps renewing keeps its
// lease past its duration; killed with SIGKILL, it blocks nobody for
// longer than the lease.
func TestLeaseOutlivesNoLiveHolder(t *testing.T) {
	if os.Getenv("PGSTORE_LEASE_HOLDER") != "" {
		return // the helper runs in TestLeaseHolderProcess
	}
	ctx := testCtx(t)
	url := pgtest.DB(t)
	const lease = time.Second
	open(t, url, pgstore.Options{}) // migrate before the child does
	cmd := exec.Command(os.Args[0], "-test.run=^TestLeaseHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PGSTORE_LEASE_HOLDER="+url)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "held" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	s := open(t, url, pgstore.Options{Lease: lease})
	// Three lease durations: the holder renews, nobody takes it.
	wait, cancel := context.WithTimeout(ctx, 3*lease)
	_, err = s.Acquire(wait, "conv:t/c")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire of a live holder's lease: %v, want the deadline", err)
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	wait, cancel = context.WithTimeout(ctx, 10*lease)
	defer cancel()
	release, err := s.Acquire(wait, "conv:t/c")
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	release()
}

// TestLeaseHolderProcess is TestLeaseOutlivesNoLiveHolder's holder: it
// takes the lease, says so, and blocks until killed.
func TestLeaseHolderProcess(t *testing.T) {
	url := os.Getenv("PGSTORE_LEASE_HOLDER")
	if url == "" {
		t.Skip("a helper process of TestLeaseOutlivesNoLiveHolder")
	}
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{Lease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.TryAcquire(context.Background(), "conv:t/c"); err != nil || !ok {
		t.Fatalf("holder: ok %v, %v", ok, err)
	}
	os.Stdout.WriteString("held\n")
	select {}
}

// TestLeasesOfTheSoleWriterTakeNoRoundTrip: alone on the database a Store
// holds its leases in memory, no round trip, each name once at a time.
func TestLeasesOfTheSoleWriterTakeNoRoundTrip(t *testing.T) {
	ctx := testCtx(t)
	rt := &roundTrips{}
	soles := make(chan bool, 4)
	s := open(t, pgtest.DB(t), pgstore.Options{Tracer: rt, OnSole: func(sole bool) { soles <- sole }})
	if !<-soles {
		t.Fatal("alone on the database: not the sole writer")
	}
	rt.take()
	release := mustTryAcquire(t, ctx, s, "summary/t/c", "the sole writer")
	cannotTake(t, ctx, s, "summary/t/c", "the sole writer, again,")
	release()
	release() // a second release does nothing
	mustTryAcquire(t, ctx, s, "summary/t/c", "the sole writer, after release,")()
	if n := rt.take(); n != 0 {
		t.Errorf("%d round trips, want none", n)
	}
}

// TestAJoiningStoreSeesTheSoleWritersLeases: a lease the sole writer holds
// in memory is in the table by the time a second Store has opened, so the
// newcomer cannot take it until the first releases it.
func TestAJoiningStoreSeesTheSoleWritersLeases(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	soles := make(chan bool, 4)
	a := open(t, url, pgstore.Options{OnSole: func(sole bool) { soles <- sole }})
	if !<-soles {
		t.Fatal("alone on the database: not the sole writer")
	}
	release := mustTryAcquire(t, ctx, a, "summary/t/c", "the sole writer")
	b := open(t, url, pgstore.Options{})
	if <-soles {
		t.Fatal("a second Store opened: the first still sole")
	}
	cannotTake(t, ctx, b, "summary/t/c", "the newcomer")
	cannotTake(t, ctx, a, "summary/t/c", "the first, again,")
	release()
	mustTryAcquire(t, ctx, b, "summary/t/c", "the newcomer, after the release,")()
}
