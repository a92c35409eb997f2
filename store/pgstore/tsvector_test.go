package pgstore_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// TestSearchTermsStoredAsTheirTSVector: a message row's tsvector holds
// each term once with its frequency as its position, capped at 16383,
// whether the commit's statement sends its parameters in binary (pgx's
// default: the postings encoded straight into tsvector's binary format)
// or as text (the simple protocol, which a store_url may ask for), and
// on both of the commit's paths (one statement against Change.Base; a
// locked read, then the writes).
func TestSearchTermsStoredAsTheirTSVector(t *testing.T) {
	for _, mode := range []string{"", "simple_protocol"} {
		t.Run("mode="+mode, func(t *testing.T) {
			url := pgtest.DB(t)
			if mode != "" {
				sep := "?"
				if strings.Contains(url, "?") {
					sep = "&"
				}
				url += sep + "default_query_exec_mode=" + mode
			}
			s := open(t, url, pgstore.Options{})
			ctx := testCtx(t)
			k := history.Key{Tenant: "acme", Conversation: "c1"}
			// No Base: the locked read and the batch of writes.
			m := commit(t, s, k, history.Change{Append: []history.Message{
				user("Alpha beta BETA gamma 42", 5), asst(strings.Repeat("zeta ", 16390)+"eta", 16391)}})
			// With Base: the one statement.
			if _, err := s.Commit(ctx, k, history.Change{Version: m.Version, Base: &m, Now: 9e9,
				Append: []history.Message{user("theta theta", 2), asst("", 0)}}); err != nil {
				t.Fatal(err)
			}
			rows, err := s.Pool().Query(ctx, `SELECT tsv::text FROM recall_messages WHERE tenant = $1 AND conversation = $2 ORDER BY seq`, k.Tenant, k.Conversation)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			want := []string{`'42':1 'alpha':1 'beta':2 'gamma':1`, `'eta':1 'zeta':16383`, `'theta':2`, ``}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("tsvectors %q, want %q", got, want)
			}
		})
	}
}
