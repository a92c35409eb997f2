package api

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// end serves POST /conversations/{id}/end: seal the open episode now,
// serialised with chat requests.
func (c *call) end() error {
	if c.h.cfg.Summarizer == nil {
		return apierr.SummariesNotServed
	}
	release, err := c.lock()
	if err != nil {
		return err
	}
	defer release()
	return c.summaryCall(c.h.cfg.Summarizer.End)
}

// summarize serves POST /conversations/{id}/summarize: compact now. A
// summary lands by compare-and-set, between chat commits, so it takes no
// lock.
func (c *call) summarize() error {
	if c.h.cfg.Summarizer == nil {
		return apierr.SummariesNotServed
	}
	return c.summaryCall(c.h.cfg.Summarizer.Summarize)
}

// summaryCall runs a Summarizer's call on the conversation, once it is
// known to exist, and answers with the conversation it leaves.
func (c *call) summaryCall(run func(context.Context, history.Key) (history.Meta, error)) error {
	if _, err := c.meta(); err != nil {
		return err
	}
	m, err := run(c.ctx, c.key)
	if err != nil {
		return err
	}
	return c.reply(200, c.detail(&m))
}

// ContextQuery is what the context call computes a context for.
type ContextQuery struct {
	// Model is the model of the next request ("" for the tenant's default
	// encoding and window).
	Model string
	// Budget, if > 0, overrides the tenant's history budget.
	Budget int
}

// Context is what the next chat request would send upstream.
type Context struct {
	Object   string           `json:"object"` // "context"
	Model    string           `json:"model"`
	Messages []ContextMessage `json:"messages"`
	// Tokens is the context's estimated prompt tokens; Budget the budget
	// it was curated to.
	Tokens int `json:"tokens"`
	Budget int `json:"budget"`
	// Summary is the summary injected, if any.
	Summary *ContextSummary `json:"summary"`
	// Dropped are the turns and parts left out, and why.
	Dropped []Dropped `json:"dropped"`
	// StoredTurns and IncludedTurns are what X-Recall-History reports.
	StoredTurns   int `json:"stored_turns"`
	IncludedTurns int `json:"included_turns"`
}

// ContextMessage is one message of a context: its seq (0 for one Recall
// made, such as the summary), its tokens and its JSON as sent.
type ContextMessage struct {
	Seq    uint64 `json:"seq"`
	Tokens int    `json:"tokens"`
	// Protocol names the protocol Message is in; Role and Text are what
	// its codec reads of it, as in a stored message's view.
	Protocol string          `json:"protocol"`
	Role     string          `json:"role"`
	Text     string          `json:"text"`
	Message  json.RawMessage `json:"message"`
}

// ContextSummary is the summary a context injects.
type ContextSummary struct {
	Text    string `json:"text"`
	Through uint64 `json:"through"`
	Turns   int    `json:"turns"`
	Tokens  int    `json:"tokens"`
}

// Dropped is something curation left out of or changed in a context:
// Reason is "budget", "max_turns", "summarized", "truncated" or
// "repaired"; Turn and Seq say where (0 when not one message).
type Dropped struct {
	Reason string `json:"reason"`
	Turn   uint32 `json:"turn"`
	Seq    uint64 `json:"seq"`
	Tokens int    `json:"tokens"`
}

// context serves GET /conversations/{id}/context?model=&budget=.
func (c *call) context() error {
	args := c.rc.QueryArgs()
	q := ContextQuery{Model: string(args.Peek("model"))}
	if v := args.Peek("budget"); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil || n < 1 {
			return apierr.InvalidValue("budget", "Invalid 'budget': expected a positive number of tokens.")
		}
		q.Budget = n
	}
	if _, err := c.meta(); err != nil {
		return err
	}
	ctxt, err := c.h.cfg.Context(c.ctx, c.caller, c.key, q)
	if err != nil {
		return err
	}
	ctxt.Object = "context"
	if ctxt.Messages == nil {
		ctxt.Messages = []ContextMessage{}
	}
	if ctxt.Dropped == nil {
		ctxt.Dropped = []Dropped{}
	}
	return c.reply(200, ctxt)
}
