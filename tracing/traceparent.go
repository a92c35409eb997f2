package tracing

import (
	"encoding/hex"
)

// remoteParent is the span a traceparent header names.
type remoteParent struct {
	trace   [16]byte
	span    [8]byte
	sampled bool
}

// parseTraceparent reads a W3C traceparent header as the span it names,
// without the propagator's string conversions: ok is false for a header
// that names none (absent, malformed, version ff, an all-zero id), which
// makes the exchange's span the root of a new trace, as the propagator
// would.
func parseTraceparent(tp []byte) (p remoteParent, ok bool) {
	// version "-" trace-id "-" parent-id "-" flags: 2+1+32+1+16+1+2.
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' {
		return p, false
	}
	if !lowerHex(tp[:2]) || string(tp[:2]) == "ff" || string(tp[:2]) == "00" && len(tp) != 55 || len(tp) > 55 && tp[55] != '-' {
		return p, false
	}
	var flags [1]byte
	if !lowerHex(tp[3:35]) || !lowerHex(tp[36:52]) || !lowerHex(tp[53:55]) {
		return p, false
	}
	hex.Decode(p.trace[:], tp[3:35])
	hex.Decode(p.span[:], tp[36:52])
	hex.Decode(flags[:], tp[53:55])
	p.sampled = flags[0]&flagSampled != 0
	return p, p.trace != [16]byte{} && p.span != [8]byte{}
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

// validTracestate reports whether ts is a W3C tracestate Recall carries:
// at most 32 list members of key=value, 512 bytes, printable ASCII (the
// specification's limits; its finer key and value grammar is left to
// the collector). A tracestate that is not is dropped, as the
// propagator drops it.
func validTracestate(ts []byte) bool {
	if len(ts) == 0 || len(ts) > 512 {
		return false
	}
	members, eq := 1, false
	for _, c := range ts {
		switch {
		case c == ',':
			if !eq {
				return false
			}
			members, eq = members+1, false
		case c == '=':
			eq = true
		case c < 0x20 || c > 0x7e:
			return false
		}
	}
	return eq && members <= 32
}
