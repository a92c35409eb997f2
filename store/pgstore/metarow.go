package pgstore

import (
	"fmt"

	"github.com/recallproxy/recall/history"
)

// A metadata row keeps the summary apart (schema version 7): the meta
// column holds splitMark and the record without the summary, the summary
// column the summary (history.AppendSummary), NULL if there is none.
// Every commit rewrites meta; only a commit that changes the summary
// writes summary.
//
// A meta column without the mark was written before version 7, or by a
// replica of an earlier build: its record holds the summary, if any, and
// the summary column is ignored (an earlier build that cleared the
// summary, erasing what it said, left the column as it was). The mark
// makes an earlier build's decoder refuse the row (its records' first
// byte is a version, 1 to 3), so a replica not yet upgraded fails on a
// conversation a new one wrote instead of writing it back without the
// summary column.

// splitMark is the first byte of a meta column written split.
const splitMark = 0xff

// splitSQL holds a row written split: a plain commit's one statement
// updates only such a row; any other takes the two-statement path, which
// writes it split.
const splitSQL = `get_byte(meta, 0) = 255`

// metaRow encodes m as its row's meta and summary columns.
func metaRow(m *history.Meta) (meta, summary []byte) {
	rest := *m
	rest.Summary = nil
	meta = history.AppendMeta([]byte{splitMark}, &rest)
	if m.Summary != nil {
		summary = history.AppendSummary(nil, m.Summary)
	}
	return meta, summary
}

// readMeta decodes a row's meta and summary columns.
func readMeta(meta, summary []byte) (history.Meta, error) {
	if len(meta) == 0 || meta[0] != splitMark {
		return history.UnmarshalMeta(meta) // the summary is in the record
	}
	m, err := history.UnmarshalMeta(meta[1:])
	if err != nil || summary == nil {
		return m, err
	}
	if m.Summary, err = history.UnmarshalSummary(summary); err != nil {
		return history.Meta{}, fmt.Errorf("pgstore: %w", err)
	}
	return m, nil
}

// summaryThrough is m's through column: its summary's covered-through,
// 0 without one.
func summaryThrough(m *history.Meta) int64 {
	if m.Summary == nil {
		return 0
	}
	return int64(m.Summary.Through)
}
