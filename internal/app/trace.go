package app

import (
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tracing"
)

// tracedJobs is a summary manager's OnJobDone that makes each job
// attempt an update_memory span with t, then calls next (if set).
func tracedJobs(t *tracing.Tracer, now func() time.Time, next func(summary.JobDone)) func(summary.JobDone) {
	return func(j summary.JobDone) {
		m := tracing.Memory{Operation: tracing.OperationUpdateMemory, Kind: "summary",
			Tenant: j.Key.Tenant, Conversation: j.Key.Conversation, Start: j.Start, End: now(),
			Attrs: []attribute.KeyValue{
				attribute.String(tracing.AttrJobOutcome, string(j.Outcome)),
				attribute.Int(tracing.AttrJobAttempt, j.Attempt),
				attribute.Int(tracing.AttrJobCalls, j.Calls),
			}}
		if j.Outcome == summary.Failed {
			m.ErrorType = "summary_failed"
		}
		if m.Start.IsZero() {
			m.Start = m.End
		}
		t.Memory(m)
		if next != nil {
			next(j)
		}
	}
}
