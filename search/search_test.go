package search_test

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/search"
)

func TestTerms(t *testing.T) {
	long := strings.Repeat("x", search.MaxTermBytes+1)
	tests := []struct {
		name, text string
		want       []string
	}{
		{"lower-cased, split on punctuation", "Hello, World! hello-world", []string{"hello", "world", "hello", "world"}},
		{"digits are terms", "order #4521 at 10:30", []string{"order", "4521", "at", "10", "30"}},
		{"unicode letters", "Ärger über Çà ΣΊΣΥΦΟΣ", []string{"ärger", "über", "çà", "σίσυφοσ"}},
		{"symbols and emoji separate", "a+b=c🙂d", []string{"a", "b", "c", "d"}},
		{"too long is dropped", "keep " + long + " this", []string{"keep", "this"}},
		{"exactly the limit is kept", long[1:], []string{long[1:]}},
		{"nothing", " \n\t.,;", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := search.Terms(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := search.QueryTerms("Cat dog CAT cat"); !slices.Equal(got, []string{"cat", "dog"}) {
		t.Errorf("QueryTerms: got %q, want [cat dog]", got)
	}
}

// Analyze counts each term of a message's text once a posting.
func TestAnalyze(t *testing.T) {
	p, n := search.Analyze([]byte("The cat saw the other cat"))
	want := []search.Posting{{"cat", 2}, {"other", 1}, {"saw", 1}, {"the", 2}}
	if !slices.Equal(p, want) || n != 6 {
		t.Errorf("Analyze: got %v length %d, want %v length 6", p, n, want)
	}
}

// Analyze lower-cases ASCII in place before it splits: its postings must
// be those of Terms over Text, which lower-cases run by run, for every
// kind of capital (ASCII, other scripts, a run mixing both, and letters
// whose lower case is longer than they are).
func TestAnalyzeAgreesWithTerms(t *testing.T) {
	for _, content := range []string{
		"The Cat saw THE other cat",
		"ÉCOLE École école, ΣΊΣΥΦΟΣ and Straße STRASSE",
		"İSTANBUL İstanbul istanbul KELVIN K",
		"mixed ÄrgerOFFICE code: HTTPServer.ServeHTTP(w, r) // TODO",
		"\u0041BC \\ \n Tab\tBed",
		strings.Repeat("Word ", 80) + strings.Repeat("x", search.MaxTermBytes+1),
	} {
		want := map[string]int{}
		terms := search.Terms(content)
		for _, term := range terms {
			want[term]++
		}
		got, n := search.Analyze([]byte(content))
		if n != len(terms) || len(got) != len(want) {
			t.Errorf("%q: got %d postings, length %d; want %d, %d", content, len(got), n, len(want), len(terms))
			continue
		}
		for _, p := range got {
			if want[p.Term] != p.TF {
				t.Errorf("%q: term %q has tf %d, want %d", content, p.Term, p.TF, want[p.Term])
			}
		}
	}
}

// Analyze runs on every stored message: it allocates the text, the terms
// and the postings, not once per capitalised word.
func TestAnalyzeAllocations(t *testing.T) {
	text := "Could you look at the Figures from last week again and tell me whether the Trend holds? I would also like a short note on What changed since the previous Report."
	raw := []byte(`{"role":"user","content":"` + text + `"}`)
	if n := testing.AllocsPerRun(100, func() { search.Analyze(chat.Codec{}.Text(make([]byte, 0, len(raw)), raw)) }); n > 3 {
		t.Errorf("Analyze allocates %.0f times a message, want at most 3", n)
	}
}

// A message with more distinct terms than MaxPostings indexes the first
// ones, with their frequencies, and keeps its whole length.
func TestAnalyzeBoundsPostings(t *testing.T) {
	var words []string
	for i := range search.MaxPostings + 100 {
		words = append(words, "w"+strconv.Itoa(i), "common")
	}
	p, n := search.Analyze([]byte(strings.Join(words, " ")))
	if len(p) != search.MaxPostings || n != len(words) {
		t.Fatalf("got %d postings, length %d; want %d, %d", len(p), n, search.MaxPostings, len(words))
	}
	for _, x := range p {
		if x.Term == "common" && x.TF != search.MaxPostings+100 {
			t.Errorf("got tf %d for common, want %d", x.TF, search.MaxPostings+100)
		}
		if i, err := strconv.Atoi(strings.TrimPrefix(x.Term, "w")); x.Term != "common" && (err != nil || i >= search.MaxPostings-1) {
			t.Errorf("got posting %q past the first %d terms", x.Term, search.MaxPostings)
		}
	}
}

// TestBM25ByHand scores a three-document corpus worked out on paper:
//
//	d1 "the cat sat"       (3 terms)
//	d2 "the dog"           (2 terms)
//	d3 "cat cat dog bird"  (4 terms)
//
// N = 3, average length 9/3 = 3.
//
//	idf(cat) = idf(dog) = ln(1 + (3-2+0.5)/(2+0.5)) = ln 1.6 = 0.470004
//	idf(bird) = ln(1 + (3-1+0.5)/(1+0.5)) = ln(8/3) = 0.980829
//	cat in d1: tf 1, dl 3: 1*2.2 / (1 + 1.2*(0.25 + 0.75*3/3)) = 2.2/2.2 = 1
//	cat in d3: tf 2, dl 4: 2*2.2 / (2 + 1.2*(0.25 + 0.75*4/3)) = 4.4/3.5
//	dog in d2: tf 1, dl 2: 2.2 / (1 + 1.2*(0.25 + 0.75*2/3)) = 2.2/1.9
//	bird in d3: tf 1, dl 4: 2.2 / (1 + 1.2*1.25) = 2.2/2.5
func TestBM25ByHand(t *testing.T) {
	st := search.Stats{Docs: 3, Terms: 9}
	if st.AvgLen() != 3 {
		t.Fatalf("got average length %v, want 3", st.AvgLen())
	}
	idf2, idf1 := search.IDF(3, 2), search.IDF(3, 1)
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"idf of a term in 2 of 3", idf2, 0.47000362924573563},
		{"idf of a term in 1 of 3", idf1, 0.9808292530117263},
		{"cat in d1", search.Score(idf2, 1, 3, st.AvgLen()), 0.47000362924573563},
		{"cat in d3", search.Score(idf2, 2, 4, st.AvgLen()), 0.5908617053374963},
		{"dog in d2", search.Score(idf2, 1, 2, st.AvgLen()), 0.5442147286003255},
		{"bird in d3", search.Score(idf1, 1, 4, st.AvgLen()), 0.8631297426503192},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.want) > 1e-12 {
			t.Errorf("%s: got %.15f, want %.15f", tt.name, tt.got, tt.want)
		}
	}
	if got := search.IDF(3, 5); got < 0 {
		t.Errorf("idf with df > n: got %v, want >= 0", got)
	}
}

func TestTopTiesNewestFirst(t *testing.T) {
	hits := []search.Hit{
		{Score: 1, CreatedAt: 5, Conversation: "a", Seq: 1},
		{Score: 2, CreatedAt: 1, Conversation: "a", Seq: 2},
		{Score: 1, CreatedAt: 9, Conversation: "b", Seq: 1},
		{Score: 1, CreatedAt: 9, Conversation: "b", Seq: 2},
		{Score: 1, CreatedAt: 9, Conversation: "a", Seq: 7},
		{Score: 0.5, CreatedAt: 99, Conversation: "c", Seq: 1},
	}
	want := []search.Hit{hits[1], hits[4], hits[3], hits[2], hits[0]}
	got := search.Top(hits, 5)
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// Top keeps the best of many candidates, whatever their order.
func TestTopOfMany(t *testing.T) {
	var hits []search.Hit
	for i := range 1000 {
		hits = append(hits, search.Hit{Score: float64((i * 7919) % 1000), CreatedAt: int64(i % 3), Conversation: "c", Seq: uint64(i)})
	}
	want := slices.Clone(hits)
	slices.SortFunc(want, func(a, b search.Hit) int {
		if search.Better(a, b) {
			return -1
		}
		return 1
	})
	for _, limit := range []int{1, 10, 999, 1000, 2000} {
		got := search.Top(slices.Clone(hits), limit)
		if n := min(limit, len(want)); !slices.Equal(got, want[:n]) {
			t.Errorf("limit %d: got %d hits starting %v, want %d starting %v", limit, len(got), got[:1], n, want[:1])
		}
	}
}

func BenchmarkAnalyze(b *testing.B) {
	text := "Could you summarise the quarterly report for the board meeting on Thursday, focusing on revenue, churn and the new pricing?"
	b.ReportAllocs()
	for b.Loop() {
		if p, _ := search.Analyze([]byte(text)); len(p) == 0 {
			b.Fatal("no postings")
		}
	}
}

// Terms never returns an empty, over-long or upper-case term, nor one
// holding anything but letters and digits; Analyze takes any bytes.
func FuzzTerms(f *testing.F) {
	for _, seed := range []string{"Hello, World!", "Ärger über ΣΊΣΥΦΟΣ", "a+b=c🙂d", strings.Repeat("x", 70), "İstanbul ǅ", "\xff\xfe bad utf8", `{"role":"user","content":[{"type":"text","text":"hi"}]}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, term := range search.Terms(text) {
			if term == "" || len(term) > search.MaxTermBytes || strings.ToLower(term) != term {
				t.Fatalf("got term %q", term)
			}
			for _, r := range term {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					t.Fatalf("got term %q holding %q", term, r)
				}
			}
		}
		var each []string
		if n := search.EachTerm([]byte(text), func(t string) { each = append(each, t) }); n != len(each) || !slices.Equal(each, search.Terms(text)) {
			t.Fatalf("EachTerm: %d terms %q, Terms: %q", n, each, search.Terms(text))
		}
		p, n := search.Analyze([]byte(text))
		sum := 0
		for _, x := range p {
			sum += x.TF
		}
		if sum > n || (len(p) < search.MaxPostings && sum != n) {
			t.Fatalf("got %d postings adding up to %d, length %d", len(p), sum, n)
		}
		// Analyze lowers ASCII before it splits; Terms lowers run by run:
		// the same terms either way.
		want := map[string]int{}
		terms := search.Terms(text)
		for _, term := range terms {
			want[term]++
		}
		if p, n := search.Analyze([]byte(text)); len(want) <= search.MaxPostings {
			if n != len(terms) || len(p) != len(want) {
				t.Fatalf("Analyze: %d postings, length %d; Terms: %d distinct of %d", len(p), n, len(want), len(terms))
			}
			for _, x := range p {
				if want[x.Term] != x.TF {
					t.Fatalf("Analyze: term %q tf %d, Terms: %d", x.Term, x.TF, want[x.Term])
				}
			}
		}
	})
}
