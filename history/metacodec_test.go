package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
)

// sampleMeta is a conversation's metadata as a busy one carries it: gaps,
// a last exchange, sealed episodes, a summary.
func sampleMeta() Meta {
	return Meta{
		NextSeq: 412, FirstHash: 0x9e3779b97f4a7c15, LastTurn: 205, Turns: 180, Messages: 377, Tokens: 51234, Cut: 120,
		Gaps:   []Range{{From: 10, To: 14}, {From: 300, To: 301, Flags: Forgotten | Erased}},
		Status: StatusActive, Model: "gpt-4o-mini-2024-07-18", ResponseID: "chatcmpl-9x2fQeLkq8uRr3TzYpA1bC0dEfGh",
		PromptTokens: 8_123_456, CompletionTokens: 654_321, CreatedAt: 1_763_900_000_000_000_000, UpdatedAt: 1_763_990_000_000_000_000,
		Version: 206,
		Last:    &Exchange{ExchangeID: ExchangeID{Key: 0xdeadbeef, Hash: 0x1234567890abcdef}, From: 410, Messages: 2, Before: Boundary{Seq: 409, Turn: 204}, Turns: 179, Tokens: 51000},
		Episode: 3, EpisodeFrom: 350,
		Episodes: []Episode{{N: 1, From: 1, To: 200, Title: "Setting up the build", SealedAt: 1_763_910_000_000_000_000},
			{N: 2, From: 201, To: 349, Title: "Fixing the flaky test", SealedAt: 1_763_950_000_000_000_000}},
		Title:     "Fixing the flaky test",
		Summary:   &Summary{Text: "The user is fixing a flaky test in the proxy.", Through: 300, Turns: 150, Tokens: 900, Model: "gpt-4o-mini", At: 1_763_960_000_000_000_000},
		Summaries: 4, SummaryPromptTokens: 40_000, SummaryCompletionTokens: 3_000,
	}
}

func BenchmarkMetaCodec(b *testing.B) {
	m := sampleMeta()
	enc, err := MarshalMeta(&m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MarshalMeta(&m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := UnmarshalMeta(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// fill sets every field v holds, recursively, to a value of its own:
// numbers count up from *n, strings name it, pointers and lists get
// values (two entries).
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.String:
		v.SetString("field " + strconv.Itoa(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n) * -1_000_003)
	case reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		v.SetUint(uint64(*n) * 131 % (1 << (v.Type().Bits() - 1)))
	default:
		panic("fill: a field of kind " + v.Kind().String() + ": teach fill and the codec")
	}
}

// Every field of Meta survives the binary encoding: a field added to Meta
// and not to the codec fails here.
func TestMetaCodecCoversEveryField(t *testing.T) {
	var m Meta
	n := 0
	fill(reflect.ValueOf(&m).Elem(), &n)
	b, err := MarshalMeta(&m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("round trip changed the record:\n got %+v\nwant %+v", got, m)
	}
	for _, m := range []Meta{{}, sampleMeta()} {
		b, err := MarshalMeta(&m)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := UnmarshalMeta(b); err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %+v: got %+v, %v", m, got, err)
		}
	}
}

// Records written before the binary encoding, as JSON, still decode.
func TestMetaCodecReadsJSON(t *testing.T) {
	m := sampleMeta()
	b, err := json.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalMeta(b)
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Errorf("JSON record decoded as %+v, %v; want %+v", got, err, m)
	}
}

// A damaged record is an error, never a panic, a partial record or a huge
// allocation; the decoded strings do not alias the caller's buffer.
func TestMetaCodecRejectsDamage(t *testing.T) {
	m := sampleMeta()
	b, err := MarshalMeta(&m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(b) {
		if got, err := UnmarshalMeta(b[:i]); err == nil {
			t.Fatalf("the first %d of %d bytes decoded as %+v", i, len(b), got)
		}
	}
	if _, err := UnmarshalMeta(append(bytes.Clone(b), 0)); err == nil {
		t.Error("a record with a byte after its end decoded")
	}
	bad := bytes.Clone(b)
	bad[0] = metaVersion + 1
	if _, err := UnmarshalMeta(bad); err == nil {
		t.Error("a record of an unknown version decoded")
	}
	// A gaps list claiming 2^40 entries: version, present, next_seq,
	// first_hash, last_turn, turns, messages, tokens, cut, the count.
	huge := append([]byte{metaVersion, 0, 1}, make([]byte, 8)...)
	huge = append(huge, 0, 0, 0, 0, 0)
	huge = binary.AppendUvarint(huge, 1<<40)
	if _, err := UnmarshalMeta(huge); err == nil {
		t.Error("a record whose gaps list is longer than the record decoded")
	}
	buf := bytes.Clone(b)
	got, err := UnmarshalMeta(buf)
	if err != nil {
		t.Fatal(err)
	}
	clear(buf)
	if got.Model != m.Model || got.Summary.Text != m.Summary.Text {
		t.Errorf("strings changed with the buffer they were decoded from: %q, %q", got.Model, got.Summary.Text)
	}
}

// Records of an older version still decode, the fields added since at
// their zero value: a record of that version is today's record of a Meta
// whose newer fields are zero, cut before their bytes.
func TestMetaCodecReadsOlderVersions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version byte
		set     func(m *Meta) // the fields the version has, beside sampleMeta's
		cut     int           // the bytes of the fields added since
	}{
		{"version 1 has no incarnation or epoch", 1,
			func(m *Meta) { m.Incarnation, m.Epoch = 0, 0 },
			11}, // incarnation(8), epoch 0, metadata "" and flags 0 (one byte each)
		{"version 2 has no metadata", 2,
			func(m *Meta) { m.Incarnation, m.Epoch = 0x1234, 7 },
			2}, // metadata "" and flags 0 (one byte each)
		{"version 3 has no tools flag", 3,
			func(m *Meta) { m.Metadata = `{"topic":"build"}` },
			1}, // flags 0 (one byte)
		{"version 4 has no session", 4,
			func(m *Meta) { m.Tools = true },
			0}, // no session: no bytes of its own
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sampleMeta()
			tc.set(&m)
			b := AppendMeta(nil, &m)
			old := bytes.Clone(b[:len(b)-tc.cut])
			old[0] = tc.version
			got, err := UnmarshalMeta(old)
			if err != nil || !reflect.DeepEqual(got, m) {
				t.Errorf("version %d record decoded as %+v, %v; want %+v", tc.version, got, err, m)
			}
		})
	}
}

// A summary record round-trips every field, fails on any damage, and
// keeps its strings when the buffer is reused.
func TestSummaryCodec(t *testing.T) {
	var want Summary
	n := 0
	fill(reflect.ValueOf(&want).Elem(), &n)
	b := AppendSummary([]byte("prefix"), &want)[len("prefix"):]
	buf := bytes.Clone(b)
	got, err := UnmarshalSummary(buf)
	if err != nil {
		t.Fatal(err)
	}
	clear(buf)
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("got %+v, want %+v", *got, want)
	}
	for i := range len(b) {
		if got, err := UnmarshalSummary(b[:i]); err == nil {
			t.Fatalf("the first %d of %d bytes decoded as %+v", i, len(b), got)
		}
	}
	if _, err := UnmarshalSummary(append(bytes.Clone(b), 0)); err == nil {
		t.Error("a record with a byte after its end decoded")
	}
}
