package app

import (
	"strconv"
	"time"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/summary"
	"github.com/recallproxy/recall/tracing"
)

// tracedJobs is a summary manager's OnJobDone that makes each job
// attempt an update_memory span with t, then calls next (if set).
func tracedJobs(t *tracing.Tracer, now func() time.Time, next func(summary.JobDone)) func(summary.JobDone) {
	return func(j summary.JobDone) {
		m := tracing.Memory{Operation: tracing.OperationUpdateMemory, Kind: "summary",
			Tenant: j.Key.Tenant, Conversation: j.Key.Conversation, Start: j.Start, End: now(),
			Attrs: []tracing.Attr{
				tracing.String(tracing.AttrJobOutcome, string(j.Outcome)),
				tracing.Int(tracing.AttrJobAttempt, j.Attempt),
				tracing.Int(tracing.AttrJobCalls, j.Calls),
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

// tracedAPI is a conversation API's OnServed that makes each forget and
// delete a delete_memory span with t, and each search (of a conversation
// or of the tenant's) a search_memory span, then calls next (if set).
func tracedAPI(t *tracing.Tracer, now func() time.Time, next func(api.Served)) func(api.Served) {
	return func(c api.Served) {
		if c.Route == "search" || c.Route == "search_tenant" {
			m := tracing.Memory{Operation: tracing.OperationSearchMemory, Kind: "search",
				Tenant: c.Tenant, Conversation: c.Key.Conversation, Start: c.Start, End: now(),
				Attrs: []tracing.Attr{tracing.Int(tracing.AttrHTTPStatus, c.Status)}}
			if c.Status >= 400 {
				m.ErrorType = strconv.Itoa(c.Status)
			} else {
				m.Attrs = append(m.Attrs, tracing.Int(tracing.AttrMemorySearchResults, c.Found))
			}
			t.Memory(m)
		}
		if c.Route == "forget" || c.Route == "delete" {
			m := tracing.Memory{Operation: tracing.OperationDeleteMemory, Kind: c.Route,
				Tenant: c.Tenant, Conversation: c.Key.Conversation, Start: c.Start, End: now(),
				Attrs: []tracing.Attr{tracing.Int(tracing.AttrHTTPStatus, c.Status)}}
			if c.Status >= 400 {
				m.ErrorType = strconv.Itoa(c.Status)
			}
			t.Memory(m)
		}
		if next != nil {
			next(c)
		}
	}
}
