package badgerstore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/search"
	"github.com/recallproxy/recall/wire"
)

// segBuilder counts each message's terms as it meets them, not through
// search.Analyze: the segments it writes are the ones Analyze's postings
// make, term for term and byte for byte, past MaxPostings distinct terms
// in a message too, and for capitals outside ASCII.
func TestSegBuilderWritesAnalyzesPostings(t *testing.T) {
	var many strings.Builder
	for i := range search.MaxPostings + 40 {
		many.WriteString("Word" + strconv.Itoa(i) + " word" + strconv.Itoa(i%7) + ", ")
	}
	texts := []string{
		"Could you look at the figures from last week again? The FIGURES, not the forecast.",
		"Ärger über ΣΊΣΥΦΟΣ: ärger ÜBER σίσυφος, İstanbul ǅemal",
		"the the the The THE tHe",
		many.String(),
		"",
		"🙂 ... !!!",
	}
	msg := func(text string, seq uint64) history.Message {
		raw, err := json.Marshal(map[string]string{"role": "user", "content": text})
		if err != nil {
			t.Fatal(err)
		}
		return history.Message{Role: wire.RoleUser, Raw: raw, Seq: seq, CreatedAt: time.Unix(1_700_000_000, int64(seq)*1000)}
	}

	// What the builder wrote before it counted terms itself: Analyze's
	// postings, chained per term in the order they were added.
	type ref struct {
		convs []string
		terms map[string][]segPosting
	}
	want := ref{terms: map[string][]segPosting{}}
	var sb segBuilder
	for c := range 3 {
		conv := "c" + strconv.Itoa(c)
		want.convs = append(want.convs, conv)
		for i, text := range texts {
			m := msg(text, uint64(i+1))
			postings, dl := search.Analyze(m.Text())
			for _, p := range postings {
				want.terms[p.Term] = append(want.terms[p.Term], segPosting{conv: c, seq: m.Seq, tf: p.TF, dl: dl, createdNs: m.CreatedAt.UnixNano()})
			}
			if got := sb.add(conv, &m); got != dl {
				t.Fatalf("%s message %d: length %d, Analyze's %d", conv, m.Seq, got, dl)
			}
		}
	}
	var got kvs
	if err := sb.write(&got, "t", 7); err != nil {
		t.Fatal(err)
	}
	// Each conversation's base: its first message's seq and time.
	first := msg("", 1)
	bases := []segBase{{1, first.CreatedAt.UnixNano()}, {1, first.CreatedAt.UnixNano()}, {1, first.CreatedAt.UnixNano()}}
	terms := 0
	for _, e := range got {
		if e.k[0] == 'g' {
			if !bytes.Equal(e.k, segTableKeyTo(nil, "t", 7)) {
				t.Errorf("table key %q, want %q", e.k, segTableKeyTo(nil, "t", 7))
			}
			table, err := decodeSegTable(e.v)
			if err != nil {
				t.Fatal(err)
			}
			var wantTable []segEntry
			for i, conv := range want.convs {
				wantTable = append(wantTable, segEntry{[]byte(conv), bases[i]})
			}
			if !reflect.DeepEqual(table, wantTable) {
				t.Errorf("table %+v, want %+v", table, wantTable)
			}
		}
		if e.k[0] != 'i' {
			continue
		}
		terms++
		term := string(e.k[len("i\x00t\x00") : len(e.k)-9])
		ps, ok := want.terms[term]
		if !ok {
			t.Fatalf("term %q written, not in Analyze's postings", term)
		}
		if !bytes.Equal(e.k, segTermKey("t", term, 7)) {
			t.Errorf("term %q: key %q, want %q", term, e.k, segTermKey("t", term, 7))
		}
		if w := encodeSegPostings(nil, bases, ps); !bytes.Equal(e.v, w) {
			t.Errorf("term %q: postings %x, want %x", term, e.v, w)
		}
	}
	if terms != len(want.terms) || terms < search.MaxPostings {
		t.Fatalf("%d terms written, Analyze's postings hold %d", terms, len(want.terms))
	}
}
