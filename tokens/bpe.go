package tokens

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/maphash"
	"math/bits"
	"strconv"
	"sync"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// vocab is one lazily built, process-wide byte-pair vocabulary.
type vocab struct {
	once sync.Once
	// ranks maps every token's bytes to its rank, the order of its merge.
	ranks *rankTable
	// maxLen is the length of the longest token, in bytes: longer byte
	// strings need no lookup.
	maxLen int
	// o200k selects the o200k_base pre-tokeniser, else cl100k_base's.
	o200k bool
	// classes is the pre-tokeniser's class table, shared by both.
	classes *[tableRunes]uint8
}

var (
	o200kVocab  = vocab{o200k: true}
	cl100kVocab vocab
)

// vocabFor returns the shared vocabulary of enc, loading it on first use
// from the files embedded in tiktoken-go-loader (BenchmarkVocabularyLoad
// times it). Unknown encodings get O200k. It returns nil
// only if the embedded vocabulary cannot be loaded, which the callers
// answer with an estimate.
func vocabFor(enc Encoding) *vocab {
	v, name := &o200kVocab, string(O200k)
	if enc == CL100k {
		v, name = &cl100kVocab, string(CL100k)
	}
	v.once.Do(func() {
		file, err := assets.Assets.ReadFile(name + ".tiktoken")
		if err != nil {
			return
		}
		ranks, maxLen, err := readRankTable(file)
		if err != nil || ranks.tokens == 0 {
			return
		}
		v.maxLen = maxLen
		v.classes = classes()
		v.ranks = ranks
	})
	if v.ranks == nil {
		return nil
	}
	return v
}

// rank returns the rank of the token b, or -1 when b is not a token.
func (v *vocab) rank(b string) int {
	if len(b) > v.maxLen {
		return -1
	}
	return v.ranks.rank(b)
}

// rankTable is a vocabulary's token -> rank map without a pointer in it:
// an open-addressing table whose slot holds a token of up to eight bytes
// whole, with its rank, so that a lookup reads one cache line; longer
// tokens keep their bytes back to back in one array. In the proxy the
// table is out of the processor's caches between two requests' counts: a
// slot that held only an index cost three or four cache misses a lookup
// (the slot, the token's offsets, its bytes, its rank), about a quarter
// of counting a message (BenchmarkTextCold), for 6.4 MiB more than those
// slots of four bytes took. A Go map of the same 300,000 tokens (o200k and
// cl100k) held 14 MiB in 254,000 objects that every garbage collection
// marked; this holds 14 MiB in 6 arrays, which it does not scan
// (TestVocabularyMemory).
type rankTable struct {
	bytes []byte   // every token longer than eight bytes, back to back
	offs  []uint32 // the long token i is bytes[offs[i]:offs[i+1]]
	// slots has a power of two of slots, at least twice the tokens:
	// probes stay short. A token is at the slot its hash picks or the
	// next free one after it.
	slots  []rankSlot
	tokens int
	seed   maphash.Seed
}

// rankSlot is a slot of a rankTable: a token's first eight bytes
// (little-endian, zero past its end), its rank, and its length if it is
// at most eight bytes, else longToken and the index of its bytes. An
// empty slot's word is 0.
type rankSlot struct {
	key  uint64
	rank uint32
	word uint32 // length (4 bits) | long token's index << 4
}

// longToken is the length field of a token longer than eight bytes.
const longToken = 15

// keyOf returns the first eight bytes of b, little-endian, zero past its
// end.
func keyOf(b string) uint64 {
	var k uint64
	for i := range min(len(b), 8) {
		k |= uint64(b[i]) << (8 * i)
	}
	return k
}

// hash returns the hash of the token b whose key is key: splitmix64's
// finaliser of the key and length for a short token (two multiplies),
// maphash for a long one.
func (t *rankTable) hash(b string, key uint64) uint64 {
	if len(b) <= 8 {
		h := key ^ uint64(len(b))*0x9E3779B97F4A7C15
		h = (h ^ h>>30) * 0xBF58476D1CE4E5B9
		h = (h ^ h>>27) * 0x94D049BB133111EB
		return h ^ h>>31
	}
	return maphash.String(t.seed, b)
}

// readRankTable builds the table of a .tiktoken file (a line a token: its
// bytes in base64, a space, its rank) and returns it with the length of
// the longest token. It decodes the tokens straight into the table, in
// two passes over the lines (one to size the arrays): the loader's
// map[string]int of the same file cost a string and a map entry a token,
// most of the process's start.
func readRankTable(file []byte) (*rankTable, int, error) {
	tokens, long, size := 0, 0, 0
	_ = eachRank(file, func(_, tok, _ []byte) error {
		tokens++
		if n := base64.StdEncoding.DecodedLen(len(tok)); n > 8 {
			long++
			size += n
		}
		return nil
	})
	t := &rankTable{
		bytes: make([]byte, 0, size),
		offs:  make([]uint32, 1, long+1),
		slots: make([]rankSlot, 1<<bits.Len(uint(2*tokens))),
		seed:  maphash.MakeSeed(),
	}
	mask := uint64(len(t.slots) - 1)
	maxLen := 0
	placed := make([]placement, 0, tokens)
	var buf [64]byte
	err := eachRank(file, func(line, enc, num []byte) error {
		dst := buf[:]
		if d := base64.StdEncoding.DecodedLen(len(enc)); d > len(dst) {
			dst = make([]byte, d)
		}
		n, err := base64.StdEncoding.Decode(dst, enc)
		if err != nil {
			return fmt.Errorf("tokens: vocabulary line %q: %w", line, err)
		}
		r, err := strconv.ParseUint(string(num), 10, 32)
		if err != nil {
			return fmt.Errorf("tokens: vocabulary line %q: %w", line, err)
		}
		if n == 0 {
			return fmt.Errorf("tokens: vocabulary line %q: an empty token", line)
		}
		tok := dst[:n]
		maxLen = max(maxLen, n)
		key := keyOf(bytesString(tok))
		sl := rankSlot{key: key, rank: uint32(r), word: uint32(n)}
		if n > 8 {
			sl.word = uint32(len(t.offs)-1)<<4 | longToken
			t.bytes = append(t.bytes, tok...)
			t.offs = append(t.offs, uint32(len(t.bytes)))
		}
		placed = append(placed, placement{sl, uint32(t.hash(bytesString(tok), key) & mask)})
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	t.place(placed)
	return t, maxLen, nil
}

// placement is a slot's content and the slot its hash picks.
type placement struct {
	slot rankSlot
	home uint32
}

// place puts each slot of ps at its home or the next free slot after it,
// in the order of their homes' regions: the table is many times the
// processor's caches, and slots put in the file's order cost a cache miss
// each, half the time of building the table.
func (t *rankTable) place(ps []placement) {
	const regionBits = 11 // 2,048 slots, 32 KiB
	tableBits := bits.Len(uint(len(t.slots) - 1))
	shift := max(tableBits-regionBits, 0)
	regions := make([]int, 1<<(tableBits-shift)+1)
	for _, p := range ps {
		regions[p.home>>shift+1]++
	}
	for r := 1; r < len(regions); r++ {
		regions[r] += regions[r-1]
	}
	sorted := make([]placement, len(ps))
	for _, p := range ps {
		r := p.home >> shift
		sorted[regions[r]] = p
		regions[r]++
	}
	mask := uint32(len(t.slots) - 1)
	for _, p := range sorted {
		i := p.home
		for t.slots[i].word != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = p.slot
	}
	t.tokens = len(ps)
}

// eachRank calls fn with each line of a .tiktoken file that has a space,
// cut at it (the token in base64, its rank), until fn returns an error.
func eachRank(file []byte, fn func(line, tok, rank []byte) error) error {
	for rest := file; len(rest) > 0; {
		line, next, _ := bytes.Cut(rest, newline)
		rest = next
		tok, rank, ok := bytes.Cut(line, space)
		if !ok {
			continue
		}
		if err := fn(line, tok, rank); err != nil {
			return err
		}
	}
	return nil
}

var newline, space = []byte("\n"), []byte(" ")

// rank returns the rank of the token b, or -1 when b is not a token.
func (t *rankTable) rank(b string) int {
	key := keyOf(b)
	mask := uint64(len(t.slots) - 1)
	if len(b) <= 8 {
		want := uint32(len(b))
		for i := t.hash(b, key) & mask; ; i = (i + 1) & mask {
			sl := &t.slots[i]
			if sl.word == want && sl.key == key {
				return int(sl.rank)
			}
			if sl.word == 0 {
				return -1
			}
		}
	}
	for i := t.hash(b, key) & mask; ; i = (i + 1) & mask {
		sl := &t.slots[i]
		if sl.word == 0 {
			return -1
		}
		if sl.word&0xf != longToken || sl.key != key {
			continue
		}
		k := sl.word >> 4
		if string(t.bytes[t.offs[k]:t.offs[k+1]]) == b {
			return int(sl.rank)
		}
	}
}

// count returns the number of tokens of one piece: one when the piece is a
// token, else the parts left by byte-pair merging.
func (v *vocab) count(piece string) int {
	if piece == "" {
		return 0
	}
	if len(piece) == 1 || v.rank(piece) >= 0 {
		return 1 // every single byte is a token
	}
	n := len(piece)
	if n <= smallPiece {
		var next, prev [smallPiece + 1]int32
		var heap [3 * smallPiece]candidate
		return v.merge(piece, next[:n+1], prev[:n+1], heap[:0])
	}
	sc := mergePool.Get().(*scratch)
	if cap(sc.next) < n+1 {
		sc.next, sc.prev = make([]int32, n+1), make([]int32, n+1)
		sc.heap = make([]candidate, 0, 3*n)
	}
	parts := v.merge(piece, sc.next[:n+1], sc.prev[:n+1], sc.heap[:0])
	mergePool.Put(sc)
	return parts
}

// smallPiece is the longest piece merged with scratch space on the stack;
// longer ones (rare) borrow it from mergePool.
const smallPiece = 48

// scratch is the scratch space of the merge of a long piece.
type scratch struct {
	next, prev []int32
	heap       []candidate
}

var mergePool = sync.Pool{New: func() any { return new(scratch) }}

// candidate is a possible merge of the part starting at start with its
// right neighbour, covering piece[start:end], whose token has rank rank.
type candidate struct {
	rank       int32
	start, end int32
}

// merge returns the number of tokens tiktoken's byte-pair merge leaves of
// piece: starting from single bytes, it merges the adjacent pair whose
// concatenation has the lowest rank, the leftmost on ties, until no pair
// is a token. tiktoken-go rescans every pair on each step (quadratic); a
// heap ordered by (rank, start) makes the same choices in O(n log n):
// start offsets order parts as the list does, and an entry is current
// exactly when its part still ends where it did, because a merge that
// touches a pair changes its span and a span determines its rank.
//
// next and prev (len(piece)+1 each) link the parts, each named by the
// offset of its first byte; heap is empty with room for 3·len(piece)
// candidates, enough for the first pairs and two per merge.
func (v *vocab) merge(piece string, next, prev []int32, heap []candidate) int {
	n := int32(len(piece))
	for i := range n + 1 {
		next[i], prev[i] = i+1, i-1
	}
	for i := range n - 1 {
		if r := v.rank(piece[i : i+2]); r >= 0 {
			heap = push(heap, candidate{int32(r), i, i + 2})
		}
	}
	parts := int(n)
	for len(heap) > 0 {
		var c candidate
		c, heap = pop(heap)
		// Stale: the part at start has been merged away (its prev link
		// is cut) or its pair no longer spans [start, end).
		if prev[c.start] == -2 || next[c.start] >= n || next[next[c.start]] != c.end {
			continue
		}
		// Merge start with its right neighbour.
		right := next[c.start]
		next[c.start] = next[right]
		prev[next[right]] = c.start
		prev[right] = -2
		parts--
		if e := next[c.start]; e < n {
			if r := v.rank(piece[c.start:next[e]]); r >= 0 {
				heap = push(heap, candidate{int32(r), c.start, next[e]})
			}
		}
		if p := prev[c.start]; p >= 0 {
			if r := v.rank(piece[p:next[c.start]]); r >= 0 {
				heap = push(heap, candidate{int32(r), p, next[c.start]})
			}
		}
	}
	return parts
}

// less orders candidates by rank, then leftmost first.
func (a candidate) less(b candidate) bool {
	return a.rank < b.rank || a.rank == b.rank && a.start < b.start
}

// push adds c to the heap h.
func push(h []candidate, c candidate) []candidate {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

// pop removes and returns the least candidate of the heap h, not empty.
func pop(h []candidate) (candidate, []candidate) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}
