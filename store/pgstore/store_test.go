package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func open(t testing.TB, url string, o pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(testCtx(t), url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// connect opens a connection of its own to the database at url, closed
// when the test ends.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(testCtx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// msg, user and asst are the conformance suite's message makers.
var (
	msg  = storetest.Msg
	user = storetest.User
	asst = storetest.Asst
)

// turns is storetest.Turns saying "question <i>" and "answer <i>".
func turns(from, n int) []history.Message {
	return storetest.TurnsSaying(from, n, "question ", "answer ")
}

// commit is storetest.MustCommit: c on top of the conversation's
// current version.
func commit(t testing.TB, s history.Store, k history.Key, c history.Change) history.Meta {
	t.Helper()
	return storetest.MustCommit(t, s, k, c)
}

// TestSameAsBadger runs the same random changes (appends, supersedes,
// soft and hard forgets, seals, summaries) on the PostgreSQL store and on
// Badger, and checks that every Load (with random bounds, and a first
// batch small enough that long tails read on in a transaction), every
// Messages walk and every metadata record agree.
func TestSameAsBadger(t *testing.T) {
	ctx := testCtx(t)
	pg := open(t, pgtest.DB(t), pgstore.Options{FirstBatch: 4})
	bs, err := badgerstore.Open("", badgerstore.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	k := history.Key{Tenant: "acme", Conversation: "c1"}
	for step := range 150 {
		snap, err := bs.Load(ctx, k, history.Query{})
		if err != nil {
			t.Fatal(err)
		}
		m := snap.Meta
		c := history.Change{Version: m.Version, Now: int64(step+1) * 1e9, Incarnation: 7}
		switch op := rng.IntN(10); {
		case op < 5 || m.Messages == 0:
			c.Append = turns(step, 1+rng.IntN(3))
			if rng.IntN(5) == 0 {
				c.Seal = true
			}
		case op < 7:
			var active []history.Message
			_ = bs.Messages(ctx, k, 0, false, func(x history.Message) bool { active = append(active, x); return true })
			b := active[rng.IntN(len(active))]
			c.Supersede = &history.Boundary{Seq: b.Seq, Turn: b.Turn}
			c.Append = turns(1000+step, 1)
		case op < 9:
			var active []history.Message
			_ = bs.Messages(ctx, k, 0, false, func(x history.Message) bool { active = append(active, x); return true })
			seqs, err := history.Forget(active, "position:"+strconv.Itoa(1+rng.IntN(len(active))))
			if err != nil {
				t.Fatal(err)
			}
			c.Forget = history.PlanForget(active, seqs, rng.IntN(2) == 0)
		default:
			if m.NextSeq < 4 {
				continue
			}
			var through uint64
			if m.Summary != nil {
				through = m.Summary.Through
			}
			if through+1 >= m.NextSeq-1 {
				continue
			}
			c = history.Change{Now: c.Now, Summary: &history.SummaryChange{Base: through, Incarnation: m.Incarnation, Epoch: m.Epoch,
				Summary: history.Summary{Text: "so far", Through: through + 1, Turns: 1, Tokens: 3, At: c.Now}}}
		}
		want, werr := bs.Commit(ctx, k, c)
		got, gerr := pg.Commit(ctx, k, c)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("step %d: badger %v, pg %v", step, werr, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: commit meta\n got %+v\nwant %+v", step, got, want)
		}
		for range 3 {
			q := history.Query{MinMessages: rng.IntN(6), Tokens: rng.IntN(200), MaxTurns: rng.IntN(4), FromCut: rng.IntN(2) == 0}
			if rng.IntN(4) == 0 && m.NextSeq > 2 {
				q.After = uint64(rng.IntN(int(m.NextSeq)))
			}
			ws, err := bs.Load(ctx, k, q)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := pg.Load(ctx, k, q)
			if err != nil {
				t.Fatal(err)
			}
			if !sameSnap(gs, ws) {
				t.Fatalf("step %d: load %+v\n got %v complete %v\nwant %v complete %v", step, q, seqs(gs.Tail), gs.Complete, seqs(ws.Tail), ws.Complete)
			}
		}
		for _, all := range []bool{false, true} {
			var wm, gm []history.Message
			_ = bs.Messages(ctx, k, 0, all, func(x history.Message) bool {
				if x.Flags&history.Erased == 0 { // main's Badger keeps erased records (the interface says they are gone)
					wm = append(wm, x)
				}
				return true
			})
			if err := pg.Messages(ctx, k, 0, all, func(x history.Message) bool { gm = append(gm, x); return true }); err != nil {
				t.Fatal(err)
			}
			if !sameMsgs(gm, wm) {
				t.Fatalf("step %d: messages(all=%v)\n got %v\nwant %v", step, all, seqs(gm), seqs(wm))
			}
		}
	}
}

func sameSnap(a, b history.Snapshot) bool {
	return reflect.DeepEqual(a.Meta, b.Meta) && a.Complete == b.Complete && sameMsgs(a.Tail, b.Tail)
}

func sameMsgs(a, b []history.Message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Seq != y.Seq || x.Turn != y.Turn || x.Episode != y.Episode || x.Role != y.Role || string(x.Raw) != string(y.Raw) ||
			x.Tokens != y.Tokens || x.Hash != y.Hash || x.Flags != y.Flags || !x.CreatedAt.Equal(y.CreatedAt) {
			return false
		}
	}
	return true
}

func seqs(msgs []history.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = fmt.Sprintf("%d/%d", m.Seq, m.Flags)
	}
	return out
}

// TestConcurrentCommitsOneWins races commits computed from the same
// version: exactly one lands, the others get ErrConflict and leave
// nothing; the same for commits racing to create a conversation.
func TestConcurrentCommitsOneWins(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, pgtest.DB(t), pgstore.Options{MaxConns: 20})
	for _, existing := range []bool{false, true} {
		k := history.Key{Tenant: "t", Conversation: "race-" + strconv.FormatBool(existing)}
		var version uint64
		if existing {
			version = commit(t, s, k, history.Change{Append: turns(0, 1)}).Version
		}
		const n = 16
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.Commit(ctx, k, history.Change{Version: version, Now: 5e9, Append: turns(100+i, 1)})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, history.ErrConflict):
				t.Fatalf("existing=%v: got %v, want nil or ErrConflict", existing, err)
			}
		}
		if won != 1 {
			t.Fatalf("existing=%v: %d commits won, want 1", existing, won)
		}
		snap, err := s.Load(ctx, k, history.Query{MinMessages: 100})
		if err != nil {
			t.Fatal(err)
		}
		want := 2
		if existing {
			want = 4
		}
		if len(snap.Tail) != want || snap.Meta.Messages != want || snap.Meta.Version != version+1 {
			t.Fatalf("existing=%v: %d messages, meta %d messages version %d; want %d, version %d", existing, len(snap.Tail), snap.Meta.Messages, snap.Meta.Version, want, version+1)
		}
	}
}

// TestHardForgetErasesRows checks that a hard forget deletes the records
// with their search terms (a soft one keeps them), and Delete every row.
func TestHardForgetErasesRows(t *testing.T) {
	ctx := testCtx(t)
	s := open(t, pgtest.DB(t), pgstore.Options{})
	k := history.Key{Tenant: "t", Conversation: "c"}
	commit(t, s, k, history.Change{Append: []history.Message{user("secret zebra", 5), asst("noted giraffe", 5)}})
	count := func(table string, and ...string) int {
		var n int
		sql := "SELECT count(*) FROM " + table + " WHERE tenant = 't' AND conversation = 'c'"
		for _, a := range and {
			sql += " AND " + a
		}
		if err := s.Pool().QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var active []history.Message
	_ = s.Messages(ctx, k, 0, false, func(m history.Message) bool { active = append(active, m); return true })
	commit(t, s, k, history.Change{Forget: history.PlanForget(active, []uint64{2}, false)})
	if got := count("recall_messages"); got != 2 {
		t.Fatalf("after a soft forget: %d message rows, want 2", got)
	}
	commit(t, s, k, history.Change{Forget: history.PlanForget(active[:1], []uint64{1}, true)})
	if got := count("recall_messages"); got != 1 {
		t.Fatalf("after a hard forget: %d message rows, want 1", got)
	}
	if got := count("recall_messages", "tsv @@ 'zebra'::tsquery"); got != 0 {
		t.Fatalf("after a hard forget: %d rows indexed under the erased message's term, want 0", got)
	}
	if got := count("recall_messages", "tsv @@ 'giraffe'::tsquery"); got != 1 {
		t.Fatalf("after a hard forget: %d rows indexed under the kept message's term, want 1", got)
	}
	hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "zebra giraffe", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Fatalf("search found %d forgotten messages, want 0", len(hits))
	}
	if err := s.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"recall_messages", "recall_conversations"} {
		if got := count(table); got != 0 {
			t.Fatalf("after Delete: %d rows in %s, want 0", got, table)
		}
	}
	snap, err := s.Load(ctx, k, history.Query{})
	if err != nil || snap.Meta.Version != 0 {
		t.Fatalf("after Delete: version %d, %v; want a fresh conversation", snap.Meta.Version, err)
	}
}

// TestMigrationsRaceOnce opens the store from many goroutines at once on
// an empty database: every Open succeeds and each migration is recorded
// once.
func TestMigrationsRaceOnce(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := pgstore.Open(ctx, url, pgstore.Options{MaxConns: 2})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, url, pgstore.Options{})
	all, err := pgstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var rows, version int
	if err := s.Pool().QueryRow(ctx, "SELECT count(*), max(version) FROM recall_schema").Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != len(all) || version != all[len(all)-1].Version || s.SchemaVersion() != version {
		t.Fatalf("recall_schema: %d rows up to version %d (store says %d), want %d up to %d", rows, version, s.SchemaVersion(), len(all), all[len(all)-1].Version)
	}
}

// TestBadURLKeepsPassword fails to open a malformed URL without quoting it.
func TestBadURLKeepsPassword(t *testing.T) {
	_, err := pgstore.Open(testCtx(t), "postgres://u:hunter2@[::1", pgstore.Options{})
	if err == nil {
		t.Fatal("opened a malformed URL")
	}
	if s := err.Error(); contains(s, "hunter2") {
		t.Fatalf("error %q quotes the password", s)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
