package api

import (
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// Hit is one search result: the conversation, the score and the message.
type Hit struct {
	Conversation string  `json:"conversation"`
	Score        float64 `json:"score"`
	Message
}

// SearchResult is the answer to a search: hits, best first.
type SearchResult struct {
	Object string `json:"object"`
	Query  string `json:"query"`
	Data   []Hit  `json:"data"`
}

// search serves GET /conversations/{id}/search?q=&limit=.
func (c *call) search() error {
	if _, err := c.meta(); err != nil {
		return err
	}
	return c.find(c.key.Conversation)
}

// searchTenant serves GET /search?q=&limit=, across the caller's
// conversations.
func (c *call) searchTenant() error { return c.find("") }

// find ranks the caller's messages (conv's only, if set) against q: BM25
// over the tenant's active messages, ties newest first (Store.Search).
func (c *call) find(conv string) error {
	q := string(c.rc.QueryArgs().Peek("q"))
	if q == "" {
		return apierr.InvalidValue("q", "Missing required parameter: 'q' (the text to search for).")
	}
	if len(q) > 1000 {
		return apierr.InvalidValue("q", "Invalid 'q': at most 1000 bytes.")
	}
	limit, err := c.limit(defaultLimit, maxLimit)
	if err != nil {
		return err
	}
	hits, err := c.h.cfg.Store.Search(c.ctx, c.key.Tenant, history.SearchQuery{Text: q, Conversation: conv, Limit: limit})
	if err != nil {
		return err
	}
	c.found = len(hits)
	out := SearchResult{Object: "list", Query: q, Data: make([]Hit, len(hits))}
	for i := range hits {
		out.Data[i] = Hit{Conversation: hits[i].Conversation, Score: hits[i].Score, Message: messageOf(&hits[i].Message)}
	}
	return c.reply(200, out)
}
