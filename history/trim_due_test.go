package history_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
)

// TestTrimDue: an append trims when one of its records' ids ends in 0, or
// when it holds 16 records or more; a few records whose ids end
// otherwise (a chat exchange's and its summary call's, in one batch) do
// not.
func TestTrimDue(t *testing.T) {
	recs := func(ns ...uint64) []history.ExchangeRecord {
		var out []history.ExchangeRecord
		for _, n := range ns {
			out = append(out, history.ExchangeRecord{ID: history.NewExchangeID(n)})
		}
		return out
	}
	many := make([]uint64, 16)
	for i := range many {
		many[i] = uint64(16*i + 1)
	}
	for _, c := range []struct {
		name string
		recs []history.ExchangeRecord
		want bool
	}{
		{"one ending in 1", recs(0x21), false},
		{"one ending in 0", recs(0x20), true},
		{"two ending otherwise", recs(0x21, 0x32), false},
		{"two, one ending in 0", recs(0x21, 0x30), true},
		{"fifteen ending otherwise", recs(many[:15]...), false},
		{"sixteen ending otherwise", recs(many...), true},
		{"an empty id", []history.ExchangeRecord{{}}, true},
	} {
		ids := make([]string, len(c.recs))
		for i := range c.recs {
			ids[i] = c.recs[i].ID
		}
		if got := history.TrimDue(c.recs); got != c.want {
			t.Errorf("TrimDue(%s) = %v, want %v", c.name, got, c.want)
		}
		if got := history.TrimDueIDs(ids); got != c.want {
			t.Errorf("TrimDueIDs(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
