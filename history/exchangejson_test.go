package history

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// fullRecord is a record with every field set.
func fullRecord() ExchangeRecord {
	return ExchangeRecord{
		ID: "xch_18ee3b4500518fbc", Object: "conversation.exchange", CreatedAt: 1796438468, Kind: "tool_round",
		Thread: "explore", ThreadReason: "agent_id", Ingress: "responses", Upstream: "chat.completions",
		Model: "gpt-4o-mini", Stream: true, Status: "answered", HTTPStatus: 200, Error: "upstream_timeout",
		LatencyMS: ExchangeLatency{FirstByte: 1, Upstream: 2, Total: 4, Recall: -3},
		Budget:    64000, Calibration: 1.0625,
		Tokens: ExchangeTokens{Instructions: 1, Tools: 2, Summary: 909, History: 516, New: 48, Output: 3,
			EstimatedInput: 1476, CalibratedInput: 1570, ReportedInput: 12, Cached: 7, CacheCreation: 8},
		Summary:  &SummaryUse{Through: 94, Tokens: 909, Role: "system", Cut: true},
		Included: []Span{{From: 95, To: 100}, {From: 101, To: 101}}, NewMessages: 1,
		Dropped:       []Dropped{{From: 1, To: 94, Reason: DroppedSummarized, Turns: 47}, {From: 2, To: 3, Reason: "forgotten"}},
		Cut:           []CutResult{{Seq: 9, CharsBefore: 10000, CharsAfter: 200, MaxChars: 200}, {Seq: 10, CharsBefore: 5, CharsAfter: 4}},
		RepairedCalls: 2, Committed: []Span{{From: 101, To: 102}}, CacheBreakpoint: 18446744073709551615,
		Incarnation: 77,
	}
}

// TestFullRecordSetsEveryField: fullRecord sets every field of a record
// and of what it holds, so that a field added to ExchangeRecord and not
// to appendExchange fails TestAppendExchangeIsEncodingJSON.
func TestFullRecordSetsEveryField(t *testing.T) {
	var check func(path string, v reflect.Value)
	check = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				check(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Pointer:
			if v.IsNil() {
				t.Errorf("%s is nil in fullRecord", path)
				return
			}
			check(path, v.Elem())
		case reflect.Slice:
			if v.Len() == 0 {
				t.Errorf("%s is empty in fullRecord", path)
				return
			}
			for i := range v.Len() {
				check(path, v.Index(i))
			}
		default:
			if v.IsZero() && !(path == "ExchangeRecord.Dropped.Turns" || path == "ExchangeRecord.Cut.MaxChars") {
				t.Errorf("%s is zero in fullRecord", path)
			}
		}
	}
	check("ExchangeRecord", reflect.ValueOf(fullRecord()))
}

// checkLikeJSON fails t unless MarshalExchange writes r as encoding/json.
func checkLikeJSON(t *testing.T, name string, r ExchangeRecord) {
	t.Helper()
	want, werr := json.Marshal(&r)
	got, gerr := MarshalExchange(&r)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: error %v, want encoding/json's %v", name, gerr, werr)
	}
	if werr == nil && !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

// MarshalExchange writes a record byte for byte as encoding/json does:
// omitted and null fields, empty and nil lists, strings that need
// escaping, floats in either notation, and refuses what it refuses.
func TestAppendExchangeIsEncodingJSON(t *testing.T) {
	checkLikeJSON(t, "zero", ExchangeRecord{})
	checkLikeJSON(t, "full", fullRecord())
	empty := fullRecord()
	empty.Included, empty.Dropped, empty.Cut, empty.Committed = []Span{}, []Dropped{}, []CutResult{}, []Span{}
	empty.Summary = &SummaryUse{}
	checkLikeJSON(t, "empty lists and summary", empty)
	for _, s := range []string{"", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnewline\n\x00\x1f\x7f",
		"héllo wörld ✓", "line\u2028para\u2029", "bad \xff\xfe utf-8", "emoji 🦀"} {
		r := fullRecord()
		r.Model, r.Thread, r.Dropped[0].Reason, r.Summary.Role = s, s, s, s
		checkLikeJSON(t, "string "+s, r)
	}
	for _, f := range []float64{0, 1, -1, 0.5, 1.0 / 3, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 1.7976931348623157e308,
		5e-324, -2.5e-8, math.Inf(1), math.Inf(-1), math.NaN()} {
		r := fullRecord()
		r.Calibration = f
		checkLikeJSON(t, "calibration", r)
	}
}

// FuzzAppendExchange: any strings and numbers, written as encoding/json
// writes them.
func FuzzAppendExchange(f *testing.F) {
	f.Add("gpt-4o", "main", "summarized", int64(1), uint64(2), 1.0, 3)
	f.Add("<\u2028\xff>", "\x00\"\\", "", int64(-1), uint64(math.MaxUint64), 1e-9, 0)
	f.Fuzz(func(t *testing.T, model, thread, reason string, i int64, u uint64, fl float64, n int) {
		r := fullRecord()
		r.Model, r.Thread, r.Dropped[1].Reason = model, thread, reason
		r.CreatedAt, r.LatencyMS.Recall, r.CacheBreakpoint, r.Included[0].To = i, i, u, u
		r.Calibration, r.Tokens.History, r.Dropped[1].Turns, r.Cut[1].MaxChars = fl, n, n, n
		checkLikeJSON(t, "fuzzed", r)
	})
}

// BenchmarkMarshalExchange is a record like the load script's, encoded.
func BenchmarkMarshalExchange(b *testing.B) {
	r := fullRecord()
	r.Thread, r.ThreadReason, r.Error, r.Cut, r.CacheBreakpoint = "", "", "", []CutResult{}, 0
	b.Run("appender", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MarshalExchange(&r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
