package pgstore

import (
	"fmt"

	"github.com/recallproxy/recall/history"
)

// A metadata row keeps the summary apart (schema version 7): the meta
// column holds the record without it, the summary column the summary
// (history.AppendSummary), NULL if there is none. Every commit rewrites
// meta; only a commit that changes the summary writes summary. A meta
// record that still holds a summary, from before version 7 or from a
// replica of an earlier build, wins over the column.

// metaRow encodes m as its row's meta and summary columns.
func metaRow(m *history.Meta) (meta, summary []byte, err error) {
	rest := *m
	rest.Summary = nil
	if meta, err = history.MarshalMeta(&rest); err != nil {
		return nil, nil, err
	}
	if m.Summary != nil {
		summary = history.AppendSummary(nil, m.Summary)
	}
	return meta, summary, nil
}

// readMeta decodes a row's meta and summary columns.
func readMeta(meta, summary []byte) (history.Meta, error) {
	m, err := history.UnmarshalMeta(meta)
	if err != nil || m.Summary != nil || summary == nil {
		return m, err
	}
	if m.Summary, err = history.UnmarshalSummary(summary); err != nil {
		return history.Meta{}, fmt.Errorf("pgstore: %w", err)
	}
	return m, nil
}

// splitSQL holds a row whose meta record holds no summary: not JSON (a
// '{' first) and, in a binary record, no summary bit in its second byte
// (history's metaHasSummary, 2). A plain commit's one statement updates
// only such a row; any other takes the two-statement path, which writes
// it split.
const splitSQL = `get_byte(meta, 0) <> 123 AND get_byte(meta, 1) & 2 = 0`
