package history

import (
	"encoding/json"
	"math"
	"strconv"
)

// appendExchange appends r's JSON, byte for byte as encoding/json writes
// it (TestAppendExchangeIsEncodingJSON), without its reflection: a
// record is written for every request, and json.Marshal took 2.5 µs of
// CPU a durable chat request in the load script's profiles. ok is false
// for a record encoding/json would refuse (a calibration that is not a
// finite number).
func appendExchange(b []byte, r *ExchangeRecord) (_ []byte, ok bool) {
	if math.IsNaN(r.Calibration) || math.IsInf(r.Calibration, 0) {
		return b, false
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, r.Object)
	b = append(b, `,"created_at":`...)
	b = strconv.AppendInt(b, r.CreatedAt, 10)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, r.Kind)
	if r.Thread != "" {
		b = append(b, `,"thread":`...)
		b = appendJSONString(b, r.Thread)
	}
	if r.ThreadReason != "" {
		b = append(b, `,"thread_reason":`...)
		b = appendJSONString(b, r.ThreadReason)
	}
	b = append(b, `,"ingress":`...)
	b = appendJSONString(b, r.Ingress)
	b = append(b, `,"upstream":`...)
	b = appendJSONString(b, r.Upstream)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, r.Model)
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, r.Stream)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, r.Status)
	b = append(b, `,"http_status":`...)
	b = strconv.AppendInt(b, int64(r.HTTPStatus), 10)
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, r.Error)
	}
	l := &r.LatencyMS
	b = append(b, `,"latency_ms":{"first_byte":`...)
	b = strconv.AppendInt(b, l.FirstByte, 10)
	b = append(b, `,"upstream":`...)
	b = strconv.AppendInt(b, l.Upstream, 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, l.Total, 10)
	b = append(b, `,"recall":`...)
	b = strconv.AppendInt(b, l.Recall, 10)
	b = append(b, `},"budget":`...)
	b = strconv.AppendInt(b, int64(r.Budget), 10)
	b = append(b, `,"calibration":`...)
	b = appendJSONFloat(b, r.Calibration)
	t := &r.Tokens
	for _, f := range [...]struct {
		key string
		v   int
	}{
		{`,"tokens":{"instructions":`, t.Instructions}, {`,"tools":`, t.Tools}, {`,"summary":`, t.Summary},
		{`,"history":`, t.History}, {`,"new":`, t.New}, {`,"output":`, t.Output},
		{`,"estimated_input":`, t.EstimatedInput}, {`,"calibrated_input":`, t.CalibratedInput},
		{`,"reported_input":`, t.ReportedInput}, {`,"cached":`, t.Cached}, {`,"cache_creation":`, t.CacheCreation},
	} {
		b = append(b, f.key...)
		b = strconv.AppendInt(b, int64(f.v), 10)
	}
	b = append(b, `},"summary":`...)
	if s := r.Summary; s == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"through":`...)
		b = strconv.AppendUint(b, s.Through, 10)
		b = append(b, `,"tokens":`...)
		b = strconv.AppendInt(b, int64(s.Tokens), 10)
		if s.Role != "" {
			b = append(b, `,"role":`...)
			b = appendJSONString(b, s.Role)
		}
		if s.Cut {
			b = append(b, `,"cut":true`...)
		}
		b = append(b, '}')
	}
	b = append(b, `,"included":`...)
	b = appendList(b, r.Included, appendSpanJSON)
	b = append(b, `,"new_messages":`...)
	b = strconv.AppendInt(b, int64(r.NewMessages), 10)
	b = append(b, `,"dropped":`...)
	b = appendList(b, r.Dropped, func(b []byte, d Dropped) []byte {
		b = append(b, `{"from":`...)
		b = strconv.AppendUint(b, d.From, 10)
		b = append(b, `,"to":`...)
		b = strconv.AppendUint(b, d.To, 10)
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, d.Reason)
		if d.Turns != 0 {
			b = append(b, `,"turns":`...)
			b = strconv.AppendInt(b, int64(d.Turns), 10)
		}
		return append(b, '}')
	})
	b = append(b, `,"cut":`...)
	b = appendList(b, r.Cut, func(b []byte, c CutResult) []byte {
		b = append(b, `{"seq":`...)
		b = strconv.AppendUint(b, c.Seq, 10)
		b = append(b, `,"chars_before":`...)
		b = strconv.AppendInt(b, int64(c.CharsBefore), 10)
		b = append(b, `,"chars_after":`...)
		b = strconv.AppendInt(b, int64(c.CharsAfter), 10)
		if c.MaxChars != 0 {
			b = append(b, `,"max_chars":`...)
			b = strconv.AppendInt(b, int64(c.MaxChars), 10)
		}
		return append(b, '}')
	})
	b = append(b, `,"repaired_calls":`...)
	b = strconv.AppendInt(b, int64(r.RepairedCalls), 10)
	b = append(b, `,"committed":`...)
	b = appendList(b, r.Committed, appendSpanJSON)
	if r.CacheBreakpoint != 0 {
		b = append(b, `,"cache_breakpoint":`...)
		b = strconv.AppendUint(b, r.CacheBreakpoint, 10)
	}
	return append(b, '}'), true
}

// appendList appends xs as encoding/json writes a slice (null for nil),
// each element by each.
func appendList[T any](b []byte, xs []T, each func([]byte, T) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = each(b, x)
	}
	return append(b, ']')
}

// appendSpanJSON appends a span's JSON.
func appendSpanJSON(b []byte, s Span) []byte {
	b = append(b, `{"from":`...)
	b = strconv.AppendUint(b, s.From, 10)
	b = append(b, `,"to":`...)
	b = strconv.AppendUint(b, s.To, 10)
	return append(b, '}')
}

// appendJSONString appends s as encoding/json quotes it: as it stands
// when it is printable ASCII that needs no escape (every string of a
// record Recall makes but a client's model name or thread, seldom
// otherwise), through encoding/json when not.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat appends the finite f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
