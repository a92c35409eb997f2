package pgstore_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/pgstore"
)

// releaseQuery marks, in a query's context, a lease released by a
// statement of its own.
type releaseQuery struct{}

// leaseLog counts round trips (roundTrips), keeps the SQL of every
// statement, alone or batched, and signals each release of a lease by a
// statement of its own once it returned.
type leaseLog struct {
	roundTrips
	mu       sync.Mutex
	sqls     []string
	released chan struct{}
}

func (l *leaseLog) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	l.sqls = append(l.sqls, d.SQL)
	l.mu.Unlock()
	if strings.HasPrefix(d.SQL, "UPDATE recall_leases "+pgstore.FreeSQL) {
		ctx = context.WithValue(ctx, releaseQuery{}, true)
	}
	return l.roundTrips.TraceQueryStart(ctx, c, d)
}

func (l *leaseLog) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(releaseQuery{}) != nil {
		l.released <- struct{}{}
	}
}

func (l *leaseLog) TraceBatchQuery(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchQueryData) {
	l.mu.Lock()
	l.sqls = append(l.sqls, d.SQL)
	l.mu.Unlock()
	l.roundTrips.TraceBatchQuery(ctx, c, d)
}

// leaseStatements returns, since the last call, the statements that
// take a lease (takeSQL, on its own or in a read's batch), the reads
// that take one in their own statement, those that drop one inside
// another write (a commit), and those that release one on their own.
func (l *leaseLog) leaseStatements() (takes, reads, drops, releases int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, q := range l.sqls {
		switch {
		case q == pgstore.TakeSQL:
			takes++
		case slices.Contains(pgstore.TakingSQL, q):
			reads++
		case strings.HasPrefix(q, "UPDATE recall_leases "+pgstore.FreeSQL):
			releases++
		case strings.Contains(q, pgstore.FreeSQL):
			drops++
		}
	}
	l.sqls = nil
	return takes, reads, drops, releases
}

// TestExchangeLeaseWithTheRead: through a proxy.Server on PostgreSQL with
// the window cache, as cmd/recall serves. Alone on the database, an
// exchange's lease is held in memory: no statement on the lease table.
// Once a second replica opened, each exchange takes the conversation's
// lease in its plan's read (in the read's own statement) and drops it
// in its commit's statement: two round trips a request, as without a
// lease, two statements, and no lease left behind. While another replica holds
// the lease, the exchange waits, and then plans from the turn that
// replica committed meanwhile, and so does a change through the
// Conversations API. An exchange that ends without a commit (an upstream
// error) releases the lease.
func TestExchangeLeaseWithTheRead(t *testing.T) {
	log := &leaseLog{released: make(chan struct{}, 4)}
	url := pgtest.DB(t)
	soles := make(chan bool, 4)
	waits := make(chan string, 64)
	// FreeLeases: the exchange frees the lease in its commit, as it does
	// once another replica wanted it (TestKeptLease... in keep_test.go
	// cover keeping it).
	s := open(t, url, pgstore.Options{Tracer: log, OnSole: func(sole bool) { soles <- sole },
		OnLeaseWait: sendWaits(waits), FreeLeases: true})
	if !<-soles {
		t.Fatal("alone on the database: not the sole writer")
	}
	up, tenants := defaultTenants(t)
	done := make(chan proxy.ExchangeDone, 16)
	addr, _ := serve(t, tenants, s, done)
	client := openai.NewClient(option.WithBaseURL("http://"+addr+"/v1"), option.WithAPIKey("sk-lease"),
		option.WithHeader("X-Conversation-ID", "lease"), option.WithMaxRetries(0))
	ask := func(text string) error {
		_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}})
		return err
	}
	leases := func() int {
		t.Helper()
		var n int
		if err := s.Pool().QueryRow(testCtx(t), `SELECT count(*) FROM recall_leases WHERE holder <> ''`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	request := func(phase string, wantTrips, wantReads, wantDrops int) {
		t.Helper()
		log.take()
		log.leaseStatements()
		if err := ask(phase); err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		if d := <-done; !d.Committed {
			t.Fatalf("%s: not committed: %v", phase, d.Err)
		}
		if got := log.take(); got != wantTrips {
			t.Errorf("%s: %d round trips, want %d", phase, got, wantTrips)
		}
		takes, reads, drops, releases := log.leaseStatements()
		if takes != 0 || reads != wantReads || drops != wantDrops || releases != 0 {
			t.Errorf("%s: lease taken by a statement of its own %d, by the read's statement %d, dropped by the commit %d, released alone %d times; want 0, %d, %d, 0",
				phase, takes, reads, drops, releases, wantReads, wantDrops)
		}
		if n := leases(); n != 0 {
			t.Errorf("%s: %d leases held after the exchange, want 0", phase, n)
		}
	}
	request("alone, first (a load)", 2, 0, 0)
	request("alone", 1, 0, 0)

	other := open(t, url, pgstore.Options{})
	if <-soles {
		t.Fatal("a second replica opened: still the sole writer")
	}
	request("shared, the head read", 2, 1, 1)
	request("shared, again", 2, 1, 1)

	// Another replica holds the lease: the exchange waits, then plans
	// from what that replica committed under it.
	ns, err := s.Namespaces(testCtx(t), "", "", 10)
	if err != nil || len(ns) != 1 {
		t.Fatalf("got namespaces %v (%v), want one", ns, err)
	}
	k := history.Key{Tenant: ns[0], Conversation: "lease"}
	name := history.LeaseName(history.LeaseConversation, k)
	release, err := other.Acquire(testCtx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan error, 1)
	go func() { asked <- ask("after the other replica's turn") }()
	if got := waited(t, testCtx(t), waits, "the exchange"); got != name {
		t.Fatalf("waited for lease %q, want %q", got, name)
	}
	snap, err := other.Load(testCtx(t), k, history.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Commit(testCtx(t), k, history.Change{Version: snap.Meta.Version, Now: time.Now().UnixNano(),
		Append: []history.Message{user("the other replica's turn", 6), asst("noted", 2)}}); err != nil {
		t.Fatal(err)
	}
	if n := up.Count(); n != 4 {
		t.Fatalf("%d upstream requests while the other replica held the lease, want the 4 before it", n)
	}
	release()
	if err := <-asked; err != nil {
		t.Fatal(err)
	}
	<-done
	var texts []string
	for _, m := range up.Last().Messages {
		texts = append(texts, gjson.GetBytes(m, "content").Str)
	}
	if got := strings.Join(texts, " | "); !strings.Contains(got, "the other replica's turn | noted | after the other replica's turn") {
		t.Errorf("upstream request: got %q, want it to end with the other replica's turn and the new question", got)
	}

	// A change through the Conversations API waits for the lease too.
	for len(waits) > 0 { // the exchange's waits
		<-waits
	}
	if release, err = other.Acquire(testCtx(t), name); err != nil {
		t.Fatal(err)
	}
	updated := make(chan int, 1)
	go func() {
		status, _, err := post(addr, "/v1/conversations/lease", "sk-lease", "", `{"metadata":{"topic":"leases"}}`)
		if err != nil {
			t.Error(err)
		}
		updated <- status
	}()
	if got := waited(t, testCtx(t), waits, "the API change"); got != name {
		t.Fatalf("the API change waited for lease %q, want %q", got, name)
	}
	release()
	if st := <-updated; st != http.StatusOK {
		t.Fatalf("the API change: got %d, want 200", st)
	}

	// No commit: the lease is released by a statement of its own.
	up.Enqueue(upstreamtest.Reply{Status: 500})
	log.leaseStatements()
	if err := ask("failing"); err == nil {
		t.Fatal("an upstream 500: got no error")
	}
	if d := <-done; d.Committed {
		t.Fatal("an upstream 500: committed")
	}
	select {
	case <-log.released:
	case <-testCtx(t).Done():
		t.Fatal("an exchange that did not commit never released its lease")
	}
	if _, _, drops, releases := log.leaseStatements(); drops != 0 || releases != 1 {
		t.Errorf("upstream error: lease dropped by a commit %d, released alone %d times; want 0, 1", drops, releases)
	}
	if n := leases(); n != 0 {
		t.Errorf("after the upstream error: %d leases held, want 0", n)
	}
}

// TestExchangeLeaseOfTheSoleWriterJoined: the sole writer holds an
// exchange's lease in memory (no statement); a second Store joining the
// database finds it held (the sole writer wrote it into the table before
// letting the newcomer in), and the newcomer's read that takes the lease
// waits until the holder's commit dropped it, then returns that commit.
func TestExchangeLeaseOfTheSoleWriterJoined(t *testing.T) {
	log := &leaseLog{released: make(chan struct{}, 4)}
	url := pgtest.DB(t)
	soles := make(chan bool, 4)
	// FreeLeases: the commit frees the lease (one a waiter wanted is freed
	// so anyway, but the notice may come after the commit: keep.go).
	s := open(t, url, pgstore.Options{Tracer: log, OnSole: func(sole bool) { soles <- sole }, FreeLeases: true})
	if !<-soles {
		t.Fatal("alone on the database: not the sole writer")
	}
	ctx := testCtx(t)
	k := history.Key{Tenant: "acme", Conversation: "joined"}
	commit(t, s, k, history.Change{Append: turns(0, 1)})
	log.leaseStatements()
	var mine history.ExchangeLease
	if !s.HoldLease(k, &mine) {
		t.Fatal("the sole writer: HoldLease did not hold the lease")
	}
	snap, err := s.Load(ctx, k, history.Query{Lease: &mine})
	if err != nil {
		t.Fatal(err)
	}
	if takes, reads, _, _ := log.leaseStatements(); takes+reads != 0 {
		t.Errorf("the sole writer took the lease with %d statements, want 0", takes+reads)
	}

	waits := make(chan string, 64)
	other := open(t, url, pgstore.Options{OnLeaseWait: sendWaits(waits)})
	if <-soles {
		t.Fatal("a second Store joined: still the sole writer")
	}
	var theirs history.ExchangeLease
	read := make(chan history.Snapshot, 1)
	go func() {
		snap, err := other.Load(ctx, k, history.Query{Lease: &theirs})
		if err != nil {
			t.Error(err)
		}
		read <- snap
	}()
	waited(t, ctx, waits, "the newcomer's read")
	m, err := s.Commit(ctx, k, history.Change{Version: snap.Meta.Version, Base: &snap.Meta, Now: time.Now().UnixNano(),
		Append: turns(1, 1), Lease: &mine})
	if err != nil {
		t.Fatal(err)
	}
	if mine.Held() {
		t.Error("the commit did not drop the lease")
	}
	if _, _, drops, releases := log.leaseStatements(); drops != 1 || releases != 0 {
		t.Errorf("the lease written into the table at the join: dropped by the commit %d, released alone %d times; want 1, 0", drops, releases)
	}
	got := <-read
	if got.Meta.Version != m.Version || !theirs.Held() {
		t.Errorf("the newcomer read version %d holding the lease %v, want version %d and the lease", got.Meta.Version, theirs.Held(), m.Version)
	}
	theirs.Release()
}

// TestExchangeLeaseTakenByTheReadIsFresh: a read that takes an
// exchange's lease in its own statement takes it only as its snapshot
// saw it. Another holder takes the free lease, commits a turn (the head
// moves) and drops the lease, in one transaction the read's statement
// began before and waits for: the read does not take the lease it now
// finds free, which would plan from the head before that turn; it takes
// it with a statement of its own (takeSQL), and reads the moved head.
func TestExchangeLeaseTakenByTheReadIsFresh(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.DB(t)
	s := open(t, url, pgstore.Options{})
	open(t, url, pgstore.Options{}) // a second replica: the leases are in the table
	k := history.Key{Tenant: "acme", Conversation: "fresh"}
	m := commit(t, s, k, history.Change{Append: turns(0, 1)})
	name := history.LeaseName(history.LeaseConversation, k)
	release, err := s.Acquire(ctx, name) // the lease's row, then free
	if err != nil {
		t.Fatal(err)
	}
	release()

	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE recall_leases SET holder = 'other' WHERE name = $1`, []any{name}},
		{`UPDATE recall_conversations SET version = version + 1 WHERE tenant = $1 AND conversation = $2`, []any{k.Tenant, k.Conversation}},
		{`UPDATE recall_leases SET holder = '' WHERE name = $1`, []any{name}},
	} {
		if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}

	type followed struct {
		head history.Head
		err  error
	}
	var l history.ExchangeLease
	got := make(chan followed, 1)
	go func() {
		h, _, err := s.Follow(ctx, k, history.Head{Version: m.Version, Summaries: m.Summaries, Incarnation: m.Incarnation}, m.NextSeq-1, &l)
		got <- followed{h, err}
	}()
	// The read's statement waits for the transaction's lock.
	for {
		var n int
		if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
			strings.SplitN(pgstore.TakingSQL[1], "\n", 2)[0]+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !l.Held() {
		t.Fatal("the read returned without the lease")
	}
	l.Release()
	if r.head.Version != m.Version+1 {
		t.Errorf("the read returned version %d, want %d: the turn committed before the read took the lease", r.head.Version, m.Version+1)
	}
}
