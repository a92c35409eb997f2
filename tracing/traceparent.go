package tracing

import (
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// parseTraceparent reads a W3C traceparent header (and its tracestate,
// kept when valid) as the remote span context it names, without the
// propagator's string conversions: ok is false for a header that names
// none (absent, malformed, version ff, an all-zero id), which makes the
// exchange's span the root of a new trace, as the propagator would.
func parseTraceparent(tp, ts []byte) (sc trace.SpanContext, ok bool) {
	// version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2.
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return sc, false
	}
	if !lowerHex(tp[:2]) || string(tp[:2]) == "ff" || string(tp[:2]) == "00" && len(tp) != 55 || len(tp) > 55 && tp[55] != '-' {
		return sc, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	var flags [1]byte
	if !lowerHex(tp[3:35]) || !lowerHex(tp[36:52]) || !lowerHex(tp[53:55]) {
		return sc, false
	}
	hex.Decode(tid[:], tp[3:35])
	hex.Decode(sid[:], tp[36:52])
	hex.Decode(flags[:], tp[53:55])
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true}
	if len(ts) > 0 {
		if state, err := trace.ParseTraceState(string(ts)); err == nil {
			cfg.TraceState = state
		}
	}
	sc = trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// lowerHex reports whether b is lowercase hexadecimal digits only, as
// W3C trace context requires.
func lowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
