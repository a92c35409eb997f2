package tracing

import (
	"time"
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
	Attrs []Attr

	trace [16]byte
}

// Memory queues the span of m, a root span of its own (memory operations
// run off the request path), sampled as the Tracer's sampler decides a
// root. m.Attrs must not change after. It does nothing for a nil Tracer.
func (t *Tracer) Memory(m Memory) {
	if t == nil {
		return
	}
	m.trace = newTraceID()
	if !t.sample.sampled(false, false, &m.trace) {
		return
	}
	t.q.putMemory(m)
}

// memorySpan writes m's span with enc.
func (t *Tracer) memorySpan(enc *encoder, m *Memory) {
	h := spanHead{trace: &m.trace, id: newSpanID(), name: m.Operation + " ", name2: m.Kind,
		kind: kindInternal, start: m.Start, end: m.End}
	if m.ErrorType != "" {
		h.status, h.statusIsError = m.ErrorType, true
	}
	enc.begin(&h)
	enc.str(AttrOperationName, m.Operation)
	enc.str(AttrProviderName, MemoryProvider)
	enc.str(AttrMemoryKind, m.Kind)
	if m.Conversation != "" {
		enc.str(AttrConversationID, m.Conversation)
		enc.str(AttrMemoryScope, "session")
	}
	if m.Tenant != "" {
		enc.str(AttrTenant, m.Tenant)
		enc.str(AttrMemoryNamespace, m.Tenant)
	}
	enc.optStr(AttrErrorType, m.ErrorType)
	for _, a := range m.Attrs {
		enc.attr(a)
	}
	enc.end()
}
