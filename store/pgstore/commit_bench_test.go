package pgstore_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/pgtest"
	"github.com/recallproxy/recall/store/pgstore"
)

// BenchmarkCommitProse measures the commit of a turn of prose (a 40-word
// question, a 120-word answer: about 130 distinct search terms), as a
// chat exchange commits it: in one statement (Change.Base set) or reading
// the metadata first (two round trips), with the search index's GIN
// fastupdate on (the default) and off.
func BenchmarkCommitProse(b *testing.B) {
	words := strings.Fields(`the quick brown fox jumps over a lazy dog while seven wizards quietly
judge boxing matches in distant northern villages where rivers bend slowly past old mills and
bright lanterns hang above narrow streets full of merchants selling spices cloth copper pots
fresh bread honey cheese apples pears plums grapes figs dates olives almonds walnuts chestnuts`)
	text := func(i, n int) string {
		var sb strings.Builder
		for j := range n {
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[(i*7+j*13)%len(words)])
			if j%9 == 0 {
				sb.WriteString(strconv.Itoa(i*n + j)) // terms of its own, as names and numbers are
			}
		}
		return sb.String()
	}
	for _, bc := range []struct {
		name       string
		base       bool
		fastupdate string
	}{
		{"one-statement/fastupdate-on", true, "on"},
		{"one-statement/fastupdate-off", true, "off"},
		{"two-round-trips/fastupdate-on", false, "on"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			s := open(b, pgtest.DB(b), pgstore.Options{})
			if _, err := s.Pool().Exec(ctx, "ALTER INDEX recall_messages_search SET (fastupdate = "+bc.fastupdate+")"); err != nil {
				b.Fatal(err)
			}
			var meta history.Meta
			i := 0
			var lsn0 string
			if err := s.Pool().QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn0); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.StopTimer()
			for range b.N {
				// A conversation in 16 takes each turn: commits touch
				// several rows, as the load script's do.
				k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(i%16)}
				if i < 16 {
					meta = history.Meta{}
				} else {
					snap, err := s.Load(ctx, k, history.Query{After: ^uint64(0)})
					if err != nil {
						b.Fatal(err)
					}
					meta = snap.Meta
				}
				c := history.Change{Version: meta.Version, Now: int64(i+1) * 1e9,
					Append: []history.Message{user(text(i, 40), 60), asst(text(i+1, 120), 180)}}
				if bc.base {
					c.Base = &meta
				}
				b.StartTimer()
				if _, err := s.Commit(ctx, k, c); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				i++
			}
			// The write-ahead log a commit writes (its loads write none),
			// free of the machine's noise.
			var wal float64
			if err := s.Pool().QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::float8", lsn0).Scan(&wal); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(wal/float64(b.N), "WAL-B/op")
		})
	}
}
