// Package tools holds the history tools Recall offers the model and runs
// itself (DESIGN.md section 14): end_conversation, get_conversation and
// search_conversations. Their definitions are canonical (wire.Tool): each
// upstream protocol's package shapes them. A Runner runs them against the
// store, within the caller's tenant namespace only, and bounds what they
// return.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
)

// The tools' names, as the model calls them and history.tools lists them.
const (
	EndConversation     = "end_conversation"
	GetConversation     = "get_conversation"
	SearchConversations = "search_conversations"
)

// Names are the history tools, in the order they are offered.
var Names = []string{EndConversation, GetConversation, SearchConversations}

// Output bounds. A result is cut to MaxResultChars characters (runes:
// about 2,000 tokens), with a marker; get_conversation returns at most
// MaxMessages messages, each cut to MaxMessageChars, and list_recent at
// most MaxRecent conversations; search_conversations at most MaxHits hits,
// each snippet cut to MaxSnippetChars.
const (
	MaxResultChars  = 8000
	MaxMessages     = 40
	MaxMessageChars = 1000
	MaxRecent       = 10
	MaxHits         = 20
	DefaultHits     = 5
	MaxSnippetChars = 300
	maxQueryBytes   = 1000
)

// DefaultRounds is history.tool_rounds when unset: the upstream calls one
// client request may make.
const DefaultRounds = 3

// MaxRounds is the most history.tool_rounds may be.
const MaxRounds = 10

// Validate checks a tenant's history.tools: known names, each once.
func Validate(names []string) error {
	for i, n := range names {
		if !slices.Contains(Names, n) {
			return fmt.Errorf("unknown history tool %q (known: %s)", n, strings.Join(Names, ", "))
		}
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("history tool %q listed twice", n)
		}
	}
	return nil
}

var definitions = map[string]wire.Tool{
	EndConversation: {
		Name: EndConversation,
		Description: "End the current conversation when its task is done or the topic changes. " +
			"Its title and summary are written afterwards, and the next message starts a fresh episode that keeps only the summary.",
		Parameters: []byte(`{"type":"object","properties":{"reason":{"type":"string","description":"Why the conversation ends (optional)."}},"additionalProperties":false}`),
	},
	GetConversation: {
		Name: GetConversation,
		Description: "Fetch one of your earlier conversations by id (its title, summary and messages), " +
			"or with list_recent the titles and summaries of the most recently ended ones.",
		Parameters: []byte(`{"type":"object","properties":{"conversation_id":{"type":"string","description":"The conversation to fetch."},` +
			`"list_recent":{"type":"boolean","description":"List the most recent ended conversations instead."}},"additionalProperties":false}`),
	},
	SearchConversations: {
		Name:        SearchConversations,
		Description: "Search the messages of your earlier conversations. Returns the conversation id, the message's position (seq) and a snippet of each hit, best first.",
		Parameters: []byte(`{"type":"object","properties":{"query":{"type":"string","description":"Words to search for."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":` + strconv.Itoa(MaxHits) + `,"description":"Most hits to return (default ` + strconv.Itoa(DefaultHits) + `)."}},` +
			`"required":["query"],"additionalProperties":false}`),
	},
}

// Definitions returns the definitions of the named tools, leaving out any
// whose name is in taken (a client tool of the same name wins).
func Definitions(names []string, taken []wire.Tool) []wire.Tool {
	out := make([]wire.Tool, 0, len(names))
	for _, n := range names {
		d, ok := definitions[n]
		if !ok || slices.ContainsFunc(taken, func(t wire.Tool) bool { return t.Name == n }) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// Offered reports whether name is among tools.
func Offered(tools []wire.Tool, name string) bool {
	return slices.ContainsFunc(tools, func(t wire.Tool) bool { return t.Name == name })
}

// Outcomes of a run, as metrics count them.
const (
	OutcomeOK      = "ok"
	OutcomeInvalid = "invalid" // bad arguments
	OutcomeUnknown = "unknown" // no such conversation in the namespace
	OutcomeError   = "error"   // the store failed
)

// Result is what one call returns to the model.
type Result struct {
	// Text is the result (JSON), at most MaxResultChars characters.
	Text string
	// IsError is set when the call failed; Outcome says how it ended.
	IsError bool
	Outcome string
	// End is set by end_conversation: the exchange's commit seals the
	// open episode.
	End bool
	// Found is how many hits search_conversations returned.
	Found int
}

// Runner runs the history tools for one exchange: Key is the caller's
// conversation, whose Tenant (namespace) scopes every read.
type Runner struct {
	Store history.Store
	Key   history.Key
}

// Run runs the tool name with its arguments (JSON text).
func (r *Runner) Run(ctx context.Context, name, arguments string) Result {
	var res Result
	var err error
	switch name {
	case EndConversation:
		res, err = r.end(arguments)
	case GetConversation:
		res, err = r.get(ctx, arguments)
	case SearchConversations:
		res, err = r.search(ctx, arguments)
	default:
		return failed(OutcomeInvalid, "unknown tool "+strconv.Quote(name))
	}
	if err != nil {
		return failed(OutcomeError, "the history store failed: try again later")
	}
	res.Text = Cut(res.Text, MaxResultChars)
	return res
}

// failed is an error result with message.
func failed(outcome, message string) Result {
	b, _ := json.Marshal(map[string]string{"error": message})
	return Result{Text: string(b), IsError: true, Outcome: outcome}
}

// args decodes arguments (empty: {}) into v.
func args(arguments string, v any) error {
	if strings.TrimSpace(arguments) == "" {
		return nil
	}
	d := json.NewDecoder(strings.NewReader(arguments))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func ok(v any) Result {
	b, _ := json.Marshal(v)
	return Result{Text: string(b), Outcome: OutcomeOK}
}

func (r *Runner) end(arguments string) (Result, error) {
	var a struct {
		Reason string `json:"reason"`
	}
	if err := args(arguments, &a); err != nil {
		return failed(OutcomeInvalid, "invalid arguments: "+err.Error()), nil
	}
	res := ok(map[string]any{"ended": true, "conversation_id": r.Key.Conversation})
	res.End = true
	return res, nil
}

// Conversation is get_conversation's answer for one conversation.
type Conversation struct {
	ID       string    `json:"conversation_id"`
	Title    string    `json:"title,omitempty"`
	Status   string    `json:"status"`
	Summary  string    `json:"summary,omitempty"`
	Messages []Message `json:"messages,omitempty"`
	// Truncated is set when older messages were left out.
	Truncated bool `json:"truncated,omitempty"`
}

// Message is one message of a conversation, as the tools show it.
type Message struct {
	Seq  uint64 `json:"seq"`
	Role string `json:"role"`
	Text string `json:"text"`
}

func (r *Runner) get(ctx context.Context, arguments string) (Result, error) {
	var a struct {
		ID         string `json:"conversation_id"`
		ListRecent bool   `json:"list_recent"`
	}
	if err := args(arguments, &a); err != nil {
		return failed(OutcomeInvalid, "invalid arguments: "+err.Error()), nil
	}
	switch {
	case a.ListRecent:
		return r.recent(ctx)
	case a.ID == "":
		return failed(OutcomeInvalid, "give conversation_id, or list_recent: true"), nil
	case !history.ValidID(a.ID):
		return failed(OutcomeUnknown, "unknown conversation "+strconv.Quote(a.ID)), nil
	}
	k := history.Key{Tenant: r.Key.Tenant, Conversation: a.ID}
	snap, err := r.Store.Load(ctx, k, history.Query{})
	if err != nil {
		return Result{}, err
	}
	if snap.Meta.Version == 0 { // never written, or another namespace's: the same answer
		return failed(OutcomeUnknown, "unknown conversation "+strconv.Quote(a.ID)), nil
	}
	c := conversation(a.ID, &snap.Meta)
	// The newest MaxMessages active messages the client saw, oldest first.
	var ring []Message
	total := 0
	err = r.Store.Messages(ctx, k, 0, false, func(m history.Message) bool {
		if !m.Active() || m.Flags&history.Internal != 0 {
			return true
		}
		total++
		ring = append(ring, Message{Seq: m.Seq, Role: m.Role, Text: Cut(string(m.Text()), MaxMessageChars)})
		if len(ring) > MaxMessages {
			ring = ring[1:]
		}
		return true
	})
	if err != nil {
		return Result{}, err
	}
	c.Messages, c.Truncated = ring, total > len(ring)
	// Keep the whole within the result cap: drop the oldest first.
	for len(c.Messages) > 0 {
		b, _ := json.Marshal(c)
		if utf8.RuneCount(b) <= MaxResultChars {
			break
		}
		c.Messages, c.Truncated = c.Messages[1:], true
	}
	return ok(c), nil
}

// recent lists the namespace's most recently ended conversations.
func (r *Runner) recent(ctx context.Context) (Result, error) {
	page, _, err := r.Store.List(ctx, r.Key.Tenant, history.ListQuery{
		Limit: MaxRecent,
		Keep:  func(m *history.Meta) bool { return len(m.Episodes) > 0 || m.Status == history.StatusEnded },
	})
	if err != nil {
		return Result{}, err
	}
	out := struct {
		Conversations []Conversation `json:"conversations"`
	}{Conversations: make([]Conversation, 0, len(page))}
	for _, e := range page {
		c := conversation(e.Conversation, &e.Meta)
		c.Summary = Cut(c.Summary, MaxResultChars/MaxRecent)
		out.Conversations = append(out.Conversations, c)
	}
	return ok(out), nil
}

func conversation(id string, m *history.Meta) Conversation {
	c := Conversation{ID: id, Title: m.Title, Status: string(m.Status)}
	if c.Status == "" {
		c.Status = string(history.StatusActive)
	}
	if m.Summary != nil {
		c.Summary = m.Summary.Text
	}
	return c
}

// Hit is one search_conversations hit.
type Hit struct {
	Conversation string `json:"conversation_id"`
	Seq          uint64 `json:"seq"`
	Role         string `json:"role"`
	Snippet      string `json:"snippet"`
}

func (r *Runner) search(ctx context.Context, arguments string) (Result, error) {
	var a struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := args(arguments, &a); err != nil {
		return failed(OutcomeInvalid, "invalid arguments: "+err.Error()), nil
	}
	switch {
	case strings.TrimSpace(a.Query) == "":
		return failed(OutcomeInvalid, "query is required"), nil
	case len(a.Query) > maxQueryBytes:
		return failed(OutcomeInvalid, "query is longer than "+strconv.Itoa(maxQueryBytes)+" bytes"), nil
	case a.Limit < 0:
		return failed(OutcomeInvalid, "limit must be >= 1"), nil
	case a.Limit == 0:
		a.Limit = DefaultHits
	}
	a.Limit = min(a.Limit, MaxHits)
	// Ask for more than the limit: hits on Recall's own tool rounds are
	// left out.
	hits, err := r.Store.Search(ctx, r.Key.Tenant, history.SearchQuery{Text: a.Query, Limit: 2 * a.Limit})
	if err != nil {
		return Result{}, err
	}
	out := struct {
		Hits []Hit `json:"hits"`
	}{Hits: make([]Hit, 0, a.Limit)}
	for _, h := range hits {
		if len(out.Hits) == a.Limit {
			break
		}
		if h.Message.Flags&history.Internal != 0 {
			continue
		}
		out.Hits = append(out.Hits, Hit{Conversation: h.Conversation, Seq: h.Message.Seq, Role: h.Message.Role,
			Snippet: Cut(string(h.Message.Text()), MaxSnippetChars)})
	}
	res := ok(out)
	res.Found = len(out.Hits)
	return res, nil
}

// Cut returns s cut to max characters (runes), with "…" marking a cut.
func Cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
