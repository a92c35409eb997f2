package api

import (
	"context"
	"errors"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/summary"
)

// classify maps any handler error to its catalogue entry: the one place
// the API decides a status. Unrecognised errors are local failures: a
// 500 that says nothing of the cause (the log has it).
func (c *call) classify(err error) *apierr.Error {
	var ae *apierr.Error
	var re *chat.Error
	var orphan *history.OrphanResultError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &re):
		return apierr.Invalid(re.Code, re.Param, re.Message)
	case errors.As(err, &orphan):
		return apierr.OrphanToolResult(orphan.Index)
	case errors.Is(err, summary.ErrDisabled):
		return apierr.SummariesDisabled
	case errors.Is(err, summary.ErrNoModel):
		return apierr.NoSummaryModel
	case errors.Is(err, summary.ErrNotFound):
		return apierr.ConversationNotFound
	case errors.Is(err, history.ErrConflict):
		return apierr.Changed
	case errors.Is(err, history.ErrNoSpace):
		return apierr.NoSpace
	case errors.Is(err, context.DeadlineExceeded):
		return apierr.Timeout
	}
	c.h.log.Error("api call failed", "route", c.route, "tenant", c.key.Tenant, "conversation", c.key.Conversation, "error", err)
	return apierr.Internal
}
