package badgerstore_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/pace"
	"github.com/recallproxy/recall/store/badgerstore"
)

// While requests are in flight, the search fold waits on its pacer
// between rounds: a backlog of more than one round (256 records) is not
// folded until the pacer's wait after the first round has passed.
func TestFoldRoundsArePacedWhileBusy(t *testing.T) {
	var clock atomic.Int64
	asked := make(chan time.Duration, 8)
	fire := make(chan struct{})
	p := pace.New(pace.Options{Share: 0.5, Busy: func() bool { return true },
		Now: func() time.Time { return time.Unix(0, clock.Load()) },
		After: func(d time.Duration) <-chan time.Time {
			asked <- d
			c := make(chan time.Time, 1)
			go func() {
				<-fire
				clock.Add(int64(d))
				c <- time.Unix(0, clock.Load())
			}()
			return c
		}})
	s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true, IndexBacklog: 1 << 30, Pacer: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for c := range 4 {
		k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(c)}
		mustCommit(t, s, k, history.Change{Append: turns(1, 50)}) // 100 records each
	}
	folded := make(chan error, 1)
	go func() { folded <- s.Fold() }()
	select {
	case d := <-asked:
		if d <= 0 {
			t.Fatalf("the fold waited %v, want a positive wait", d)
		}
	case err := <-folded:
		t.Fatalf("Fold returned (%v) without waiting on its pacer between rounds", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the fold never waited on its pacer")
	}
	select {
	case err := <-folded:
		t.Fatalf("Fold returned (%v) while waiting on its pacer", err)
	default:
	}
	for {
		select {
		case fire <- struct{}{}:
		case <-asked:
		case err := <-folded:
			if err != nil {
				t.Fatalf("Fold: %v", err)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatal("Fold did not return after its waits")
		}
	}
}
