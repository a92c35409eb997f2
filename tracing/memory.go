package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Memory is one operation on a conversation's memory outside an
// exchange: a summary job's attempt (OperationUpdateMemory), a forget or
// a delete through the conversation API (OperationDeleteMemory), a search
// through it (OperationSearchMemory).
type Memory struct {
	// Operation is gen_ai.operation.name; Kind names what was done
	// ("summary", "forget", "delete").
	Operation, Kind string
	// Tenant and Conversation name the conversation.
	Tenant, Conversation string
	// Start and End bound the operation.
	Start, End time.Time
	// ErrorType names why it failed ("": it did not): a code, never an
	// error's words, which may quote an upstream that quoted messages.
	ErrorType string
	// Attrs are the operation's own attributes (recall.*).
	Attrs []attribute.KeyValue
}

// Memory makes the span of m, a root span of its own (memory operations
// run off the request path). It does nothing for a nil Tracer.
func (t *Tracer) Memory(m Memory) {
	if t == nil {
		return
	}
	_, s := t.tracer.Start(context.Background(), m.Operation+" "+m.Kind,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(m.Start))
	if s.IsRecording() {
		attrs := append(make([]attribute.KeyValue, 0, 6+len(m.Attrs)),
			attribute.String(AttrOperationName, m.Operation),
			attribute.String(AttrProviderName, MemoryProvider),
			attribute.String(AttrMemoryKind, m.Kind))
		if m.Conversation != "" {
			attrs = append(attrs, attribute.String(AttrConversationID, m.Conversation), attribute.String(AttrMemoryScope, "session"))
		}
		if m.Tenant != "" {
			attrs = append(attrs, attribute.String(AttrTenant, m.Tenant), attribute.String(AttrMemoryNamespace, m.Tenant))
		}
		if m.ErrorType != "" {
			attrs = append(attrs, attribute.String(AttrErrorType, m.ErrorType))
			s.SetStatus(codes.Error, m.ErrorType)
		}
		s.SetAttributes(append(attrs, m.Attrs...)...)
	}
	s.End(trace.WithTimestamp(m.End))
}
