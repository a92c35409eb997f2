package pgstore_test

import (
	"math"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/search"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestMigrationCarriesPostingsIntoTheIndex: a database at version 3,
// whose messages were indexed as posting rows, migrates to the tsvector
// column, and a search then finds and ranks its messages exactly as a
// database written after the migration does.
func TestMigrationCarriesPostingsIntoTheIndex(t *testing.T) {
	ctx := testCtx(t)
	k := history.Key{Tenant: "t", Conversation: "c"}
	msgs := []history.Message{user("The cat sat.", 3), asst("the DOG", 2), user("cat, cat; dog: bird", 4), asst("", 1)}

	// The old layout, written as version 3's commit wrote it.
	oldURL := pgtest.DB(t)
	conn := connect(t, oldURL)
	all, err := pgstore.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE recall_schema (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	for _, m := range all {
		if m.Version > 3 {
			break
		}
		exec(m.SQL)
		exec(`INSERT INTO recall_schema (version, name) VALUES ($1, $2)`, m.Version, m.Name)
	}
	meta, writes := history.Apply(history.Meta{}, history.Change{Append: msgs, Now: 1e9, Incarnation: 7}, nil)
	mv, err := history.MarshalMeta(&meta)
	if err != nil {
		t.Fatal(err)
	}
	var docs, terms int
	for i := range writes {
		m := &writes[i]
		postings, dl := search.Analyze(m.Text())
		exec(`INSERT INTO recall_messages (tenant, conversation, seq, dl, body) VALUES ($1, $2, $3, $4, $5)`,
			k.Tenant, k.Conversation, int64(m.Seq), dl, history.AppendMessage(nil, m))
		for _, p := range postings {
			exec(`INSERT INTO recall_postings (tenant, conversation, seq, term, tf, dl, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				k.Tenant, k.Conversation, int64(m.Seq), p.Term, p.TF, dl, m.CreatedAt.UnixNano())
		}
		docs, terms = docs+1, terms+dl
	}
	exec(`INSERT INTO recall_conversations (tenant, conversation, version, summaries, updated_at, meta, docs, terms, incarnation)
VALUES ($1, $2, $3, 0, $4, $5, $6, $7, $8)`, k.Tenant, k.Conversation, int64(meta.Version), meta.UpdatedAt, mv, docs, terms, int64(meta.Incarnation))

	migrated := open(t, oldURL, pgstore.Options{})
	if v := migrated.SchemaVersion(); v != all[len(all)-1].Version {
		t.Fatalf("got schema version %d, want %d", v, all[len(all)-1].Version)
	}
	fresh := open(t, pgtest.DB(t), pgstore.Options{})
	if _, err := fresh.Commit(ctx, k, history.Change{Append: msgs, Now: 1e9, Incarnation: 7}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"cat", "dog", "bird cat", "the sat", "unicorn"} {
		got, err := migrated.Search(ctx, "t", history.SearchQuery{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.Search(ctx, "t", history.SearchQuery{Text: q, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || (q != "unicorn" && len(got) == 0) {
			t.Fatalf("%q: got %d hits after the migration, want %d (and some)", q, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.Message.Seq != w.Message.Seq || math.Abs(g.Score-w.Score) > 1e-12 || !g.Message.CreatedAt.Equal(w.Message.CreatedAt) {
				t.Errorf("%q hit %d: got seq %d score %v, want seq %d score %v", q, i, g.Message.Seq, g.Score, w.Message.Seq, w.Score)
			}
		}
	}
	var postings int
	err = migrated.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname = 'recall_postings'`).Scan(&postings)
	if err != nil || postings != 0 {
		t.Errorf("got %d recall_postings tables (%v), want it dropped", postings, err)
	}
}
