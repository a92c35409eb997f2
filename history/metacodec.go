package history

import (
	"encoding/binary"
	"encoding/json"
)

// A metadata record is read and written on every request (a load reads it,
// a commit reads and rewrites it), so it is encoded in binary, decoded
// with one string all its strings share (BenchmarkMetaCodec compares it with
// the JSON it was before).
// Records written as JSON (a '{' first) still decode.
//
//	version(1)=1 present(1: 1 last, 2 summary)
//	next_seq first_hash(8) last_turn turns messages tokens cut
//	gaps: n, n x (from to flags(1))
//	status model response_id prompt_tokens completion_tokens created_at updated_at version
//	[last: key(8) hash(8) from messages before_seq before_turn turns tokens]
//	episode episode_from episodes: n, n x (n from to title sealed_at) title
//	[summary: text through turns tokens model at]
//	summaries summary_prompt_tokens summary_completion_tokens
//	incarnation(8) epoch                                          (version 2)
//	metadata                                                      (version 3)
//	flags(uvarint: 1 tools)                                       (version 4)
//	[session: from messages before_seq before_turn tokens]        (version 5)
//
// Unsigned fields are uvarints, signed ones varints, strings a uvarint
// length and their bytes. A field added to Meta must be added here (at the
// end, under a new version); TestMetaCodecCoversEveryField fails until it
// is. Records of version 1 still decode (Incarnation and Epoch 0), of
// version 2 (Metadata ""), of version 3 (Tools false), and of version 4
// (no Session).
const metaVersion = 5

const metaFlagTools = 1

const (
	metaHasLast    = 1
	metaHasSummary = 2
	metaHasSession = 4
)

// MarshalMeta encodes a metadata record.
func MarshalMeta(m *Meta) ([]byte, error) {
	n := 172 + len(m.Status) + len(m.Model) + len(m.ResponseID) + len(m.Title) + len(m.Metadata) + 24*len(m.Gaps)
	for _, e := range m.Episodes {
		n += 40 + len(e.Title)
	}
	if s := m.Summary; s != nil {
		n += 48 + len(s.Text) + len(s.Model)
	}
	if m.Session.Known() {
		n += 40
	}
	return AppendMeta(make([]byte, 0, n), m), nil
}

// AppendMeta appends m's encoding to dst.
func AppendMeta(dst []byte, m *Meta) []byte {
	present := byte(0)
	if m.Last != nil {
		present |= metaHasLast
	}
	if m.Summary != nil {
		present |= metaHasSummary
	}
	if m.Session.Known() {
		present |= metaHasSession
	}
	dst = append(dst, metaVersion, present)
	dst = binary.AppendUvarint(dst, m.NextSeq)
	dst = binary.LittleEndian.AppendUint64(dst, m.FirstHash)
	dst = binary.AppendUvarint(dst, uint64(m.LastTurn))
	dst = binary.AppendVarint(dst, int64(m.Turns))
	dst = binary.AppendVarint(dst, int64(m.Messages))
	dst = binary.AppendVarint(dst, int64(m.Tokens))
	dst = binary.AppendUvarint(dst, m.Cut)
	dst = binary.AppendUvarint(dst, uint64(len(m.Gaps)))
	for _, g := range m.Gaps {
		dst = binary.AppendUvarint(dst, g.From)
		dst = binary.AppendUvarint(dst, g.To)
		dst = append(dst, byte(g.Flags))
	}
	dst = appendString(dst, string(m.Status))
	dst = appendString(dst, m.Model)
	dst = appendString(dst, m.ResponseID)
	dst = binary.AppendVarint(dst, m.PromptTokens)
	dst = binary.AppendVarint(dst, m.CompletionTokens)
	dst = binary.AppendVarint(dst, m.CreatedAt)
	dst = binary.AppendVarint(dst, m.UpdatedAt)
	dst = binary.AppendUvarint(dst, m.Version)
	if l := m.Last; l != nil {
		dst = binary.LittleEndian.AppendUint64(dst, l.Key)
		dst = binary.LittleEndian.AppendUint64(dst, l.Hash)
		dst = appendSpan(dst, l.From, l.Messages, l.Before)
		dst = binary.AppendVarint(dst, int64(l.Turns))
		dst = binary.AppendVarint(dst, int64(l.Tokens))
	}
	dst = binary.AppendUvarint(dst, uint64(m.Episode))
	dst = binary.AppendUvarint(dst, m.EpisodeFrom)
	dst = binary.AppendUvarint(dst, uint64(len(m.Episodes)))
	for _, e := range m.Episodes {
		dst = binary.AppendUvarint(dst, uint64(e.N))
		dst = binary.AppendUvarint(dst, e.From)
		dst = binary.AppendUvarint(dst, e.To)
		dst = appendString(dst, e.Title)
		dst = binary.AppendVarint(dst, e.SealedAt)
	}
	dst = appendString(dst, m.Title)
	if s := m.Summary; s != nil {
		dst = appendSummaryFields(dst, s)
	}
	dst = binary.AppendVarint(dst, int64(m.Summaries))
	dst = binary.AppendVarint(dst, m.SummaryPromptTokens)
	dst = binary.AppendVarint(dst, m.SummaryCompletionTokens)
	dst = binary.LittleEndian.AppendUint64(dst, m.Incarnation)
	dst = binary.AppendUvarint(dst, m.Epoch)
	dst = appendString(dst, m.Metadata)
	var flags uint64
	if m.Tools {
		flags |= metaFlagTools
	}
	dst = binary.AppendUvarint(dst, flags)
	if s := &m.Session; s.Known() {
		dst = appendSpan(dst, s.From, s.Messages, s.Before)
		dst = binary.AppendVarint(dst, int64(s.Tokens))
	}
	return dst
}

// appendSpan appends where the last exchange or the session begins, in
// the layout both share: from, messages, before's seq and turn.
func appendSpan(dst []byte, from uint64, messages int, before Boundary) []byte {
	dst = binary.AppendUvarint(dst, from)
	dst = binary.AppendVarint(dst, int64(messages))
	dst = binary.AppendUvarint(dst, before.Seq)
	return binary.AppendUvarint(dst, uint64(before.Turn))
}

func appendSummaryFields(dst []byte, s *Summary) []byte {
	dst = appendString(dst, s.Text)
	dst = binary.AppendUvarint(dst, s.Through)
	dst = binary.AppendVarint(dst, int64(s.Turns))
	dst = binary.AppendVarint(dst, int64(s.Tokens))
	dst = appendString(dst, s.Model)
	return binary.AppendVarint(dst, s.At)
}

// summaryVersion is the first byte of a summary record.
const summaryVersion = 1

// AppendSummary appends s encoded on its own, as a store keeps it apart
// from the metadata record (written only when the summary changes, where
// the metadata record is rewritten by every commit):
//
//	version(1)=1 text through turns tokens model at
func AppendSummary(dst []byte, s *Summary) []byte {
	return appendSummaryFields(append(dst, summaryVersion), s)
}

// UnmarshalSummary decodes a record AppendSummary wrote. Its strings
// share one copy of b.
func UnmarshalSummary(b []byte) (*Summary, error) {
	if len(b) < 1 || b[0] != summaryVersion {
		return nil, errorf("decode summary: bad header")
	}
	r := metaReader{b: b, s: string(b), off: 1}
	s := r.summary()
	if r.bad || r.off != len(b) {
		return nil, errorf("decode summary: malformed record")
	}
	return s, nil
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// UnmarshalMeta decodes a metadata record. Its strings share one copy of
// b: b may be reused after the call.
func UnmarshalMeta(b []byte) (Meta, error) {
	if len(b) > 0 && b[0] == '{' {
		var m Meta
		if err := json.Unmarshal(b, &m); err != nil {
			return Meta{}, errorf("decode meta: %w", err)
		}
		return m, nil
	}
	if len(b) < 2 || b[0] < 1 || b[0] > metaVersion {
		return Meta{}, errorf("decode meta: bad header")
	}
	r := metaReader{b: b, s: string(b), off: 2}
	present := b[1]
	var m Meta
	m.NextSeq = r.uvarint()
	m.FirstHash = r.uint64()
	m.LastTurn = uint32(r.uvarint())
	m.Turns = int(r.varint())
	m.Messages = int(r.varint())
	m.Tokens = int(r.varint())
	m.Cut = r.uvarint()
	if n := r.count(3); n > 0 {
		m.Gaps = make([]Range, n)
		for i := range m.Gaps {
			g := &m.Gaps[i]
			g.From = r.uvarint()
			g.To = r.uvarint()
			g.Flags = Flags(r.byte())
		}
	}
	m.Status = Status(r.string())
	m.Model = r.string()
	m.ResponseID = r.string()
	m.PromptTokens = r.varint()
	m.CompletionTokens = r.varint()
	m.CreatedAt = r.varint()
	m.UpdatedAt = r.varint()
	m.Version = r.uvarint()
	if present&metaHasLast != 0 {
		l := &Exchange{}
		l.Key = r.uint64()
		l.Hash = r.uint64()
		l.From, l.Messages, l.Before = r.span()
		l.Turns = int(r.varint())
		l.Tokens = int(r.varint())
		m.Last = l
	}
	m.Episode = uint32(r.uvarint())
	m.EpisodeFrom = r.uvarint()
	if n := r.count(5); n > 0 {
		m.Episodes = make([]Episode, n)
		for i := range m.Episodes {
			e := &m.Episodes[i]
			e.N = uint32(r.uvarint())
			e.From = r.uvarint()
			e.To = r.uvarint()
			e.Title = r.string()
			e.SealedAt = r.varint()
		}
	}
	m.Title = r.string()
	if present&metaHasSummary != 0 {
		m.Summary = r.summary()
	}
	m.Summaries = int(r.varint())
	m.SummaryPromptTokens = r.varint()
	m.SummaryCompletionTokens = r.varint()
	if b[0] >= 2 {
		m.Incarnation = r.uint64()
		m.Epoch = r.uvarint()
	}
	if b[0] >= 3 {
		m.Metadata = r.string()
	}
	if b[0] >= 4 {
		m.Tools = r.uvarint()&metaFlagTools != 0
	}
	if b[0] >= 5 && present&metaHasSession != 0 {
		s := &m.Session
		s.From, s.Messages, s.Before = r.span()
		s.Tokens = int(r.varint())
	}
	if r.bad || r.off != len(b) {
		return Meta{}, errorf("decode meta: malformed record")
	}
	return m, nil
}

// metaReader reads a binary metadata record: b, and s, its one string
// copy, which strings are cut from. Past a malformed field it reads zeros
// and sets bad.
type metaReader struct {
	b   []byte
	s   string
	off int
	bad bool
}

// span reads what appendSpan wrote.
func (r *metaReader) span() (from uint64, messages int, before Boundary) {
	from = r.uvarint()
	messages = int(r.varint())
	before.Seq = r.uvarint()
	before.Turn = uint32(r.uvarint())
	return from, messages, before
}

func (r *metaReader) summary() *Summary {
	s := &Summary{}
	s.Text = r.string()
	s.Through = r.uvarint()
	s.Turns = int(r.varint())
	s.Tokens = int(r.varint())
	s.Model = r.string()
	s.At = r.varint()
	return s
}

func (r *metaReader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }

func (r *metaReader) varint() int64 { return readVarint(r, binary.Varint) }

// readVarint reads one varint with decode (binary.Uvarint or
// binary.Varint).
func readVarint[T int64 | uint64](r *metaReader, decode func([]byte) (T, int)) T {
	x, n := decode(r.b[r.off:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.off += n
	return x
}

func (r *metaReader) uint64() uint64 {
	if !r.has(8) {
		return 0
	}
	x := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return x
}

func (r *metaReader) byte() byte {
	if !r.has(1) {
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *metaReader) string() string {
	n := r.uvarint()
	if !r.has(n) {
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

// has reports whether n more bytes are left to read; if not, the input is
// bad and nothing more is read from it.
func (r *metaReader) has(n uint64) bool {
	if n > uint64(len(r.b)-r.off) {
		r.fail()
		return false
	}
	return true
}

// fail marks the input bad and reads nothing more from it.
func (r *metaReader) fail() { r.bad, r.off = true, len(r.b) }

// count reads the length of a list whose entries take at least least
// bytes each.
func (r *metaReader) count(least int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off)/uint64(least) {
		r.fail()
		return 0
	}
	return int(n)
}
