// Package search is the full-text ranking every history.Store shares: how
// a message's text becomes terms, and how BM25 scores them. The text is
// read from the message by its protocol's codec (history.Message.Text),
// so that every protocol's words are found. Stores keep
// the postings (which messages hold a term, how often, and how long each
// message is) and the corpus statistics; this package owns the arithmetic,
// so that every store ranks the same messages in the same order.
//
// It imports nothing else from this module.
package search

import (
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// MaxTermBytes bounds a term: longer runs of letters and digits (base64
// blobs, hashes, minified code) are dropped, not indexed.
const MaxTermBytes = 64

// BM25 parameters: term-frequency saturation and length normalisation.
const (
	K1 = 1.2
	B  = 0.75
)

// Terms splits text into terms: maximal runs of Unicode letters and digits,
// lower-cased, in order, duplicates kept; anything else (spaces,
// punctuation, symbols, marks) separates terms. Runs longer than
// MaxTermBytes are dropped.
//
// It does no stemming ("runs" does not match "run"), no stop words, no
// accent folding ("café" does not match "cafe") and no segmentation of
// scripts written without spaces (a run of Chinese or Japanese is one
// term): a query finds the words as written, case aside.
func Terms(text string) []string { return appendTerms(nil, text) }

// appendTerms appends the terms of text to out (see Terms).
func appendTerms(out []string, text string) []string {
	eachTerm(text, func(t string) { out = append(out, t) })
	return out
}

// eachTerm calls fn with each term of text, in order (see Terms).
func eachTerm(text string, fn func(term string)) {
	start := -1
	lower := true // the current run is already lower case
	flush := func(end int) {
		if start >= 0 && end-start <= MaxTermBytes {
			t := text[start:end]
			if !lower {
				t = strings.ToLower(t)
			}
			if len(t) <= MaxTermBytes {
				fn(t)
			}
		}
		start, lower = -1, true
	}
	for i, r := range text {
		if r < utf8.RuneSelf {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			case r >= 'A' && r <= 'Z':
				lower = false
			default:
				flush(i)
				continue
			}
		} else if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if unicode.ToLower(r) != r {
				lower = false
			}
		} else {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
	}
	flush(len(text))
}

// MaxQueryTerms bounds the distinct terms of a query that are searched.
// A store reads every posting of each term in scope, so a query's cost
// grows with its terms: past a handful, a term adds little to the
// ranking and a whole scan to the cost.
const MaxQueryTerms = 16

// QueryTerms returns the distinct terms of a query, in order of first
// appearance: a term repeated in a query counts once, and terms past the
// first MaxQueryTerms distinct ones are left out.
func QueryTerms(text string) []string {
	terms := Terms(text)
	out := terms[:0]
	for i, t := range terms {
		if len(out) == MaxQueryTerms {
			break
		}
		if !slices.Contains(terms[:i], t) {
			out = append(out, t)
		}
	}
	return out
}

// Posting is one term of a document and how often it occurs there.
type Posting struct {
	Term string
	TF   int
}

// MaxPostings bounds the distinct terms of one message that are indexed:
// the first ones, in order of appearance. Each posting is a key a store
// writes in the commit of the message, so this bounds what a huge
// message (a long tool result, a pasted file) adds to its commit; terms
// past it are not found, but still count in the message's length.
const MaxPostings = 512

// Analyze returns the postings of a stored message whose readable text is
// b (history.Message.Text), sorted by term, and its length in terms (what
// BM25 calls the document length). It lower-cases b in place and its
// postings' terms are views of b: the caller hands b over and never
// writes it again.
func Analyze(b []byte) (postings []Posting, length int) {
	// A few allocations a message, not one a capitalised word: the text
	// lower-cased in place (lowered), and the terms, views of it, in a
	// slice sized for prose.
	text := lowered(b)
	terms := appendTerms(make([]string, 0, len(text)/5+1), text)
	length = len(terms)
	if length == 0 {
		return nil, 0
	}
	if length > MaxPostings { // perhaps more distinct terms than indexed
		kept := make(map[string]bool, MaxPostings)
		for _, t := range terms {
			if len(kept) == MaxPostings {
				break
			}
			kept[t] = true
		}
		if len(kept) == MaxPostings {
			terms = slices.DeleteFunc(slices.Clone(terms), func(t string) bool { return !kept[t] })
		}
	}
	slices.Sort(terms)
	distinct := 1
	for i := 1; i < len(terms); i++ {
		if terms[i] != terms[i-1] {
			distinct++
		}
	}
	postings = make([]Posting, 0, distinct)
	for _, t := range terms {
		if n := len(postings); n > 0 && postings[n-1].Term == t {
			postings[n-1].TF++
			continue
		}
		postings = append(postings, Posting{Term: t, TF: 1})
	}
	return postings, length
}

// EachTerm calls fn with each term of a stored message whose readable
// text is b, in order, duplicates kept, and returns their number: the
// terms and length Analyze counts, for an index that gathers its own
// postings. Like Analyze, it lower-cases b in place and the terms are
// views of b: the caller hands b over and never writes it again. An index
// built from it keeps Analyze's bound: a message's first MaxPostings
// distinct terms.
func EachTerm(b []byte, fn func(term string)) (length int) {
	eachTerm(lowered(b), func(t string) {
		length++
		fn(t)
	})
	return length
}

// lowered lower-cases b's ASCII letters in place and returns it as a
// string sharing its memory (b is never written again). The rest of a
// run with other capitals is lowered by eachTerm, which then allocates
// that run's term: one allocation a message, not one a capitalised word.
func lowered(b []byte) string {
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Stats are the corpus statistics BM25 needs: how many documents the
// searched scope holds and their total length in terms. The scope is the
// one searched: the tenant's messages, or one conversation's. A
// document frequency (df) counts the documents of the scope holding the
// term, on the same footing.
//
// A store counts every message record it keeps in the scope, active or
// not (superseded and soft-forgotten messages stay stored and indexed;
// only erased and deleted ones leave), and document frequencies the same
// way: statistics then change only when postings are written or removed,
// never when a range is merely flagged, and a store keeps them without
// reading the messages a supersede or soft forget flags. Only active
// messages are returned.
type Stats struct {
	Docs  int
	Terms int
}

// AvgLen returns the average document length (1 for an empty corpus).
func (s Stats) AvgLen() float64 {
	if s.Docs <= 0 || s.Terms <= 0 {
		return 1
	}
	return float64(s.Terms) / float64(s.Docs)
}

// IDF is the inverse document frequency of a term that df of n documents
// hold: ln(1 + (n - df + 0.5) / (df + 0.5)), never negative.
func IDF(n, df int) float64 {
	if df > n {
		n = df // a statistic read a moment apart from the postings
	}
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// Score is one term's BM25 contribution to a document of length dl that
// holds it tf times, in a corpus of average length avgdl.
func Score(idf float64, tf, dl int, avgdl float64) float64 {
	f := float64(tf)
	return idf * f * (K1 + 1) / (f + K1*(1-B+B*float64(dl)/avgdl))
}

// Hit is a scored document, as Better orders them.
type Hit struct {
	Score        float64
	CreatedAt    int64 // Unix nanoseconds
	Conversation string
	Seq          uint64
}

// Better reports whether a ranks before b: a higher score, then newer
// (CreatedAt, then Seq: messages of one commit share their time), then,
// between conversations with equal times, by conversation id so the order
// is total.
func Better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	if a.Conversation != b.Conversation {
		return a.Conversation < b.Conversation
	}
	return a.Seq > b.Seq
}

// Top returns the best limit of hits, best first. It reorders hits in
// place and keeps only limit of them in a heap, so ranking n candidates
// costs O(n log limit), not a sort of all of them.
func Top(hits []Hit, limit int) []Hit {
	if limit <= 0 {
		return hits[:0]
	}
	if len(hits) > limit {
		// hits[:limit] is a heap with the worst of the best at the root;
		// a better candidate replaces it.
		h := hits[:limit]
		for i := limit/2 - 1; i >= 0; i-- {
			down(h, i)
		}
		for _, c := range hits[limit:] {
			if Better(c, h[0]) {
				h[0] = c
				down(h, 0)
			}
		}
		hits = h
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		switch {
		case Better(a, b):
			return -1
		case Better(b, a):
			return 1
		}
		return 0
	})
	return hits
}

// down restores the heap property of h (worst at the root) from i.
func down(h []Hit, i int) {
	for {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && Better(h[worst], h[l]) {
			worst = l
		}
		if r < len(h) && Better(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}
