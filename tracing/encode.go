package tracing

import (
	"math"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Spans are written straight into an OTLP ExportTraceServiceRequest's
// protobuf (opentelemetry/proto/collector/trace/v1), field by field into
// reused buffers: no span objects, no attribute slices, no message
// structs to marshal. The field numbers are those of
// opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto.
const (
	fieldRequestResourceSpans = 1 // ExportTraceServiceRequest.resource_spans

	fieldResourceSpansResource = 1 // ResourceSpans.resource
	fieldResourceSpansScope    = 2 // ResourceSpans.scope_spans
	fieldResourceAttributes    = 1 // Resource.attributes
	fieldScopeSpansScope       = 1 // ScopeSpans.scope
	fieldScopeSpansSpans       = 2 // ScopeSpans.spans
	fieldScopeName             = 1 // InstrumentationScope.name

	fieldSpanTraceID    = 1
	fieldSpanID         = 2
	fieldSpanTraceState = 3
	fieldSpanParentID   = 4
	fieldSpanName       = 5
	fieldSpanKind       = 6
	fieldSpanStart      = 7
	fieldSpanEnd        = 8
	fieldSpanAttributes = 9
	fieldSpanStatus     = 15
	fieldSpanFlags      = 16

	fieldStatusMessage = 2
	fieldStatusCode    = 3

	fieldKeyValueKey   = 1
	fieldKeyValueValue = 2
	fieldAnyString     = 1
	fieldAnyBool       = 2
	fieldAnyInt        = 3
	fieldAnyDouble     = 4
	fieldAnyArray      = 5
	fieldArrayValues   = 1
)

// Span kinds and the error status code (Span.SpanKind, Status.StatusCode).
const (
	kindInternal    = 1
	kindClient      = 3
	statusCodeError = 2
)

// Span flags (trace.proto's SpanFlags): the W3C trace flags in the low
// byte, and whether the parent is remote.
const (
	flagSampled      = 0x01
	flagHasIsRemote  = 0x100
	flagParentRemote = 0x200
)

// spanHead is what a span is besides its attributes and status.
type spanHead struct {
	trace         *[16]byte
	id, parent    [8]byte // parent zero: a root span
	parentRemote  bool
	state         string // the W3C tracestate carried ("": none)
	name, name2   string // the span's name is name+name2
	kind          int
	start, end    time.Time
	status        string // the error status's message
	statusIsError bool
}

// encoder writes spans: one span at a time into span (begin, the
// attribute methods, end), each ended span appended to spans as a
// ScopeSpans.spans field. Its buffers are reused batch after batch.
type encoder struct {
	spans []byte
	span  []byte
	n     int // spans written since reset
}

func (e *encoder) reset() { e.spans, e.n = e.spans[:0], 0 }

// begin starts a span with h's fields.
func (e *encoder) begin(h *spanHead) {
	b := e.span[:0]
	b = appendTag(b, fieldSpanTraceID, protowire.BytesType)
	b = appendBytesOf(b, h.trace[:])
	b = appendTag(b, fieldSpanID, protowire.BytesType)
	b = appendBytesOf(b, h.id[:])
	if h.state != "" {
		b = appendTag(b, fieldSpanTraceState, protowire.BytesType)
		b = appendBytesOf(b, h.state)
	}
	flags := uint32(flagSampled | flagHasIsRemote)
	if h.parent != ([8]byte{}) {
		b = appendTag(b, fieldSpanParentID, protowire.BytesType)
		b = appendBytesOf(b, h.parent[:])
		if h.parentRemote {
			flags |= flagParentRemote
		}
	}
	b = appendTag(b, fieldSpanFlags, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, flags)
	b = appendTag(b, fieldSpanName, protowire.BytesType)
	b = appendVarint(b, uint64(len(h.name)+len(h.name2)))
	b = append(append(b, h.name...), h.name2...)
	b = appendTag(b, fieldSpanKind, protowire.VarintType)
	b = appendVarint(b, uint64(h.kind))
	b = appendTag(b, fieldSpanStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, unixNano(h.start))
	b = appendTag(b, fieldSpanEnd, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, unixNano(h.end))
	if h.statusIsError {
		b = appendTag(b, fieldSpanStatus, protowire.BytesType)
		b = appendVarint(b, uint64(1+protowire.SizeBytes(len(h.status))+1+1))
		b = appendTag(b, fieldStatusMessage, protowire.BytesType)
		b = appendBytesOf(b, h.status)
		b = appendTag(b, fieldStatusCode, protowire.VarintType)
		b = appendVarint(b, statusCodeError)
	}
	e.span = b
}

// end appends the span begun to spans.
func (e *encoder) end() {
	e.spans = appendTag(e.spans, fieldScopeSpansSpans, protowire.BytesType)
	e.spans = appendBytesOf(e.spans, e.span)
	e.n++
}

// appendTag appends a field's tag: one byte for the fields below 16,
// every one but Span.flags.
func appendTag(b []byte, field protowire.Number, typ protowire.Type) []byte {
	if field < 16 {
		return append(b, byte(field)<<3|byte(typ))
	}
	return protowire.AppendTag(b, field, typ)
}

// appendVarint appends v, one byte inline for the small values that
// most are (lengths, kinds, counts).
func appendVarint(b []byte, v uint64) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return protowire.AppendVarint(b, v)
}

// appendBytesOf appends a length-delimited value (a string or bytes).
func appendBytesOf[T string | []byte](b []byte, v T) []byte {
	return append(appendVarint(b, uint64(len(v))), v...)
}

// unixNano is t as OTLP's nanoseconds since the epoch (0 for a zero t).
func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// A KeyValue's encoding is tag, length, key, tag, length, AnyValue; an
// AnyValue's is one tag and its value.

func appendKey(b []byte, field protowire.Number, key string, valueLen int) []byte {
	b = appendTag(b, field, protowire.BytesType)
	b = appendVarint(b, uint64(1+protowire.SizeBytes(len(key))+1+protowire.SizeBytes(valueLen)))
	b = appendTag(b, fieldKeyValueKey, protowire.BytesType)
	b = appendBytesOf(b, key)
	b = appendTag(b, fieldKeyValueValue, protowire.BytesType)
	return appendVarint(b, uint64(valueLen))
}

func appendString(b []byte, field protowire.Number, key, v string) []byte {
	b = appendKey(b, field, key, 1+protowire.SizeBytes(len(v)))
	b = appendTag(b, fieldAnyString, protowire.BytesType)
	return appendBytesOf(b, v)
}

func appendInt(b []byte, field protowire.Number, key string, v int64) []byte {
	b = appendKey(b, field, key, 1+protowire.SizeVarint(uint64(v)))
	b = appendTag(b, fieldAnyInt, protowire.VarintType)
	return appendVarint(b, uint64(v))
}

func appendBool(b []byte, field protowire.Number, key string, v bool) []byte {
	b = appendKey(b, field, key, 2)
	b = appendTag(b, fieldAnyBool, protowire.VarintType)
	return appendVarint(b, protowire.EncodeBool(v))
}

func appendFloat(b []byte, field protowire.Number, key string, v float64) []byte {
	b = appendKey(b, field, key, 9)
	b = appendTag(b, fieldAnyDouble, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

// appendStrings writes a one-string array value (the finish reasons).
func appendStrings1(b []byte, field protowire.Number, key, v string) []byte {
	elem := 1 + protowire.SizeBytes(len(v)) // AnyValue{string_value}
	array := 1 + protowire.SizeBytes(elem)  // ArrayValue{values}
	b = appendKey(b, field, key, 1+protowire.SizeBytes(array))
	b = appendTag(b, fieldAnyArray, protowire.BytesType)
	b = appendVarint(b, uint64(array))
	b = appendTag(b, fieldArrayValues, protowire.BytesType)
	b = appendVarint(b, uint64(elem))
	b = appendTag(b, fieldAnyString, protowire.BytesType)
	return appendBytesOf(b, v)
}

// The span's attributes.

func (e *encoder) str(key, v string) { e.span = appendString(e.span, fieldSpanAttributes, key, v) }

// optStr is str for an attribute that is left out when v is empty.
func (e *encoder) optStr(key, v string) {
	if v != "" {
		e.str(key, v)
	}
}

func (e *encoder) int(key string, v int) {
	e.span = appendInt(e.span, fieldSpanAttributes, key, int64(v))
}
func (e *encoder) int64(key string, v int64) { e.span = appendInt(e.span, fieldSpanAttributes, key, v) }
func (e *encoder) bool(key string, v bool)   { e.span = appendBool(e.span, fieldSpanAttributes, key, v) }
func (e *encoder) float(key string, v float64) {
	e.span = appendFloat(e.span, fieldSpanAttributes, key, v)
}
func (e *encoder) strs1(key, v string) { e.span = appendStrings1(e.span, fieldSpanAttributes, key, v) }

// attr writes a.
func (e *encoder) attr(a Attr) { e.span = a.append(e.span, fieldSpanAttributes) }

// request appends to b the ExportTraceServiceRequest of the spans
// written since reset, under the resource (its encoded attributes) and
// Recall's scope.
func (e *encoder) request(b, resource []byte) []byte {
	scope := 1 + protowire.SizeBytes(len(scopeName))
	scopeSpans := 1 + protowire.SizeBytes(scope) + len(e.spans)
	rs := 1 + protowire.SizeBytes(len(resource)) + 1 + protowire.SizeBytes(scopeSpans)
	b = appendTag(b, fieldRequestResourceSpans, protowire.BytesType)
	b = appendVarint(b, uint64(rs))
	b = appendTag(b, fieldResourceSpansResource, protowire.BytesType)
	b = appendBytesOf(b, resource)
	b = appendTag(b, fieldResourceSpansScope, protowire.BytesType)
	b = appendVarint(b, uint64(scopeSpans))
	b = appendTag(b, fieldScopeSpansScope, protowire.BytesType)
	b = appendVarint(b, uint64(scope))
	b = appendTag(b, fieldScopeName, protowire.BytesType)
	b = appendBytesOf(b, scopeName)
	return append(b, e.spans...)
}

// Attr is an attribute of a memory operation's span (Memory.Attrs).
type Attr struct {
	Key  string
	kind byte // 's', 'i', 'b', 'f'
	s    string
	i    int64
	f    float64
}

// String, Int and Bool make an Attr.
func String(key, v string) Attr { return Attr{Key: key, kind: 's', s: v} }

// Int is an integer Attr.
func Int(key string, v int) Attr { return Attr{Key: key, kind: 'i', i: int64(v)} }

// Bool is a boolean Attr.
func Bool(key string, v bool) Attr {
	a := Attr{Key: key, kind: 'b'}
	if v {
		a.i = 1
	}
	return a
}

// Float64 is a floating-point Attr.
func Float64(key string, v float64) Attr { return Attr{Key: key, kind: 'f', f: v} }

// Value is a's value as a string, int64, bool or float64.
func (a Attr) Value() any {
	switch a.kind {
	case 'i':
		return a.i
	case 'b':
		return a.i == 1
	case 'f':
		return a.f
	}
	return a.s
}

func (a Attr) append(b []byte, field protowire.Number) []byte {
	switch a.kind {
	case 'i':
		return appendInt(b, field, a.Key, a.i)
	case 'b':
		return appendBool(b, field, a.Key, a.i == 1)
	case 'f':
		return appendFloat(b, field, a.Key, a.f)
	}
	return appendString(b, field, a.Key, a.s)
}
