package badgerstore

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// BenchmarkSegBuilder builds one fold round's segment as the folder
// does, without Badger: 64 conversations of 4 messages of prose each,
// analysed and encoded. Per message: its time, and the bytes of keys and
// values the segment writes for it, with the load script's short
// conversation ids and with UUIDs (what SDKs and agents name sessions).
func BenchmarkSegBuilder(b *testing.B) {
	for _, ids := range []struct {
		name string
		id   func(c int) string
	}{
		{"ids=short", func(c int) string { return "bench-" + strconv.Itoa(c) }},
		{"ids=uuid", func(c int) string { return fmt.Sprintf("%08x-4b1c-4d2e-9f3a-%012x", c*7919, c*104729) }},
	} {
		b.Run(ids.name, func(b *testing.B) { benchSegBuilder(b, ids.id) })
	}
}

func benchSegBuilder(b *testing.B, id func(c int) string) {
	q := history.Message{Role: wire.RoleUser, Raw: []byte(`{"role":"user","content":"Could you look at the figures from last week again and tell me whether the trend holds? I would also like a short note on what changed since the previous report, and whether we should adjust the forecast for the next quarter."}`)}
	a := history.Message{Role: wire.RoleAssistant, Raw: []byte(`{"role":"assistant","content":"The trend holds, though less strongly than the report suggested. Revenue grew by four percent against the forecast's six, and most of the gap is in the northern region, where two large renewals slipped into the next quarter. Churn was flat. Since the previous report, the pricing change reached every new customer, and the first cohort on it converts a little better. I would keep the forecast for the next quarter, but move the two renewals into it and say so in the note."}`)}
	convs := make([]string, 64)
	for c := range convs {
		convs[c] = id(c)
	}
	created := time.Unix(1_760_000_000, 0)
	var sb segBuilder
	var out kvs
	var written int
	b.ReportAllocs()
	for b.Loop() {
		for c, conv := range convs {
			for i := range 4 {
				m := q
				if i%2 == 1 {
					m = a
				}
				m.Seq = uint64(100 + i)
				m.CreatedAt = created.Add(time.Duration(c*4+i) * 1500 * time.Millisecond)
				sb.add(conv, &m)
			}
		}
		out = out[:0]
		if err := sb.write(&out, "t", 1); err != nil {
			b.Fatal(err)
		}
		written = 0
		for _, e := range out {
			written += len(e.k) + len(e.v)
		}
		sb.reset()
	}
	n := float64(len(convs) * 4)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*n), "ns/message")
	b.ReportMetric(float64(written)/n, "bytes/message")
}
