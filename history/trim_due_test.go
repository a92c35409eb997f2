package history_test

import (
	"testing"

	"github.com/recallproxy/recall/history"
)

// TestTrimDue: an append trims when one of its records' ids numbers a
// multiple of 64, or when it holds 64 records or more; a few records
// whose ids number otherwise (a chat exchange's and its summary call's,
// in one batch) do not.
func TestTrimDue(t *testing.T) {
	recs := func(ns ...uint64) []history.ExchangeRecord {
		var out []history.ExchangeRecord
		for _, n := range ns {
			out = append(out, history.ExchangeRecord{ID: history.NewExchangeID(n)})
		}
		return out
	}
	many := make([]uint64, 64)
	for i := range many {
		many[i] = uint64(64*i + 1)
	}
	for _, c := range []struct {
		name string
		recs []history.ExchangeRecord
		want bool
	}{
		{"one numbered 0x21", recs(0x21), false},
		{"one numbered 0x20 (ends in 0, not a multiple of 64)", recs(0x20), false},
		{"one numbered 0x40", recs(0x40), true},
		{"one numbered 0x1c0", recs(0x1c0), true},
		{"one numbered 0xf80", recs(0xf80), true},
		{"one numbered 0xfe0", recs(0xfe0), false},
		{"two numbered otherwise", recs(0x21, 0x30), false},
		{"two, one a multiple of 64", recs(0x21, 0x100), true},
		{"sixty-three numbered otherwise", recs(many[:63]...), false},
		{"sixty-four numbered otherwise", recs(many...), true},
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
