package badgerstore

import (
	"strconv"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// BenchmarkSegBuilder builds one fold round's segment as the folder
// does, without Badger: 64 conversations of 4 messages of prose each,
// analysed and encoded. Per message.
func BenchmarkSegBuilder(b *testing.B) {
	q := history.Message{Role: wire.RoleUser, Raw: []byte(`{"role":"user","content":"Could you look at the figures from last week again and tell me whether the trend holds? I would also like a short note on what changed since the previous report, and whether we should adjust the forecast for the next quarter."}`)}
	a := history.Message{Role: wire.RoleAssistant, Raw: []byte(`{"role":"assistant","content":"The trend holds, though less strongly than the report suggested. Revenue grew by four percent against the forecast's six, and most of the gap is in the northern region, where two large renewals slipped into the next quarter. Churn was flat. Since the previous report, the pricing change reached every new customer, and the first cohort on it converts a little better. I would keep the forecast for the next quarter, but move the two renewals into it and say so in the note."}`)}
	var sb segBuilder
	var out kvs
	b.ReportAllocs()
	for b.Loop() {
		for c := range 64 {
			conv := "c" + strconv.Itoa(c)
			for i := range 4 {
				m := q
				if i%2 == 1 {
					m = a
				}
				m.Seq = uint64(i + 1)
				sb.add(conv, &m)
			}
		}
		out = out[:0]
		if err := sb.write(&out, "t", 1); err != nil {
			b.Fatal(err)
		}
		sb.reset()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64*4), "ns/message")
}
