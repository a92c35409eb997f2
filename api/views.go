package api

import (
	"encoding/json"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/wire"
	// Stored messages of every protocol are read through their codecs.
	_ "github.com/recallproxy/recall/protocol/gemini"
	_ "github.com/recallproxy/recall/protocol/messages"
	_ "github.com/recallproxy/recall/protocol/responses"
)

// shortSummary is how much of a summary a list shows, in bytes (cut on a
// rune boundary).
const shortSummary = 280

// Conversation is a conversation as a list shows it (times in Unix
// seconds).
type Conversation struct {
	ID string `json:"id"`
	// Parent and Thread are, for a subagent's thread (ID is
	// history.ThreadID(Parent, Thread)), the conversation it is a thread
	// of and its name; empty for a conversation.
	Parent    string `json:"parent,omitempty"`
	Thread    string `json:"thread,omitempty"`
	Object    string `json:"object"`
	Title     string `json:"title"`
	Status    string `json:"status"`
	Summary   string `json:"summary"`
	CreatedAt int64  `json:"created_at"`
	UpdatedAt int64  `json:"updated_at"`
	Turns     int    `json:"turns"`
	Messages  int    `json:"messages"`
	Tokens    int    `json:"tokens"`
}

// Detail is one conversation with its capacity: what GET
// /conversations/{id} and the mutating calls answer.
type Detail struct {
	Conversation
	Capacity Capacity  `json:"capacity"`
	Usage    Usage     `json:"usage"`
	Model    string    `json:"model"`
	Episode  uint32    `json:"episode"`
	Episodes []Episode `json:"episodes"`
	// Calibration is what was learned of how the upstream counts the
	// tenant's prompts for Model (null without a model).
	Calibration *Calibrated `json:"calibration"`
}

// Calibrated is a model's calibration as a conversation shows it: the
// ratio of the upstream's input count to Recall's estimate applied to
// the budget (1 until learned), over how many answered exchanges.
type Calibrated struct {
	Model   string  `json:"model"`
	Ratio   float64 `json:"ratio"`
	Samples int     `json:"samples"`
}

// Capacity says how full a conversation is against its tenant's budget.
type Capacity struct {
	// TurnsStored, MessagesStored and TokensStored count the active
	// (sendable) history.
	TurnsStored    int `json:"turns_stored"`
	MessagesStored int `json:"messages_stored"`
	TokensStored   int `json:"tokens_stored"`
	// TurnsSummarized are the turns the summary stands in for.
	TurnsSummarized int `json:"turns_summarized"`
	SummaryTokens   int `json:"summary_tokens"`
	// BudgetTokens is the history budget for the conversation's model:
	// the tenant's, or half the model's input window (budget_tokens 0).
	BudgetTokens int `json:"budget_tokens"`
}

// Usage adds up what the upstream reported for the conversation's
// exchanges, and what its summaries cost.
type Usage struct {
	PromptTokens            int64 `json:"prompt_tokens"`
	CompletionTokens        int64 `json:"completion_tokens"`
	Summaries               int   `json:"summaries"`
	SummaryPromptTokens     int64 `json:"summary_prompt_tokens"`
	SummaryCompletionTokens int64 `json:"summary_completion_tokens"`
}

// Episode is a sealed episode.
type Episode struct {
	N        uint32 `json:"n"`
	From     uint64 `json:"from_seq"`
	To       uint64 `json:"to_seq"`
	Title    string `json:"title"`
	SealedAt int64  `json:"sealed_at"`
}

// Message is a stored message: its place, its count, its flags and the
// exact JSON it arrived as.
type Message struct {
	Object    string   `json:"object"`
	Seq       uint64   `json:"seq"`
	Turn      uint32   `json:"turn"`
	Episode   uint32   `json:"episode"`
	CreatedAt int64    `json:"created_at"`
	Tokens    int      `json:"tokens"`
	Flags     []string `json:"flags"`
	// Protocol names the protocol Message is in; Role and Text are what
	// its codec reads of it, so that a reader needs no protocol's JSON.
	Protocol string          `json:"protocol"`
	Role     string          `json:"role"`
	Text     string          `json:"text"`
	Message  json.RawMessage `json:"message"`
}

// flag names, as the API spells them.
const (
	flagSuperseded  = "superseded"
	flagForgotten   = "forgotten"
	flagRecallTools = "recall_tools" // Recall's history tools' calls and results
)

func conversationOf(id string, m *history.Meta) Conversation {
	c := Conversation{
		ID: id, Object: "conversation", Title: m.Title, Status: string(m.Status),
		CreatedAt: m.CreatedAt / 1e9, UpdatedAt: m.UpdatedAt / 1e9,
		Turns: m.Turns, Messages: m.Messages, Tokens: m.Tokens,
	}
	if c.Status == "" {
		c.Status = string(history.StatusActive)
	}
	c.Parent, c.Thread, _ = history.SplitThread(id)
	if c.Thread == "" {
		c.Parent = ""
	}
	if m.Summary != nil {
		c.Summary = cut(m.Summary.Text, shortSummary)
	}
	return c
}

func detailOf(id string, m *history.Meta, budget int) Detail {
	d := Detail{
		Conversation: conversationOf(id, m),
		Capacity: Capacity{TurnsStored: m.Turns, MessagesStored: m.Messages, TokensStored: m.Tokens,
			BudgetTokens: budget},
		Usage: Usage{PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens, Summaries: m.Summaries,
			SummaryPromptTokens: m.SummaryPromptTokens, SummaryCompletionTokens: m.SummaryCompletionTokens},
		Model:    m.Model,
		Episode:  max(m.Episode, 1),
		Episodes: make([]Episode, 0, len(m.Episodes)),
	}
	if s := m.Summary; s != nil {
		d.Summary = s.Text // whole, where a list shows it short
		d.Capacity.TurnsSummarized, d.Capacity.SummaryTokens = s.Turns, s.Tokens
	}
	for _, e := range m.Episodes {
		d.Episodes = append(d.Episodes, Episode{N: e.N, From: e.From, To: e.To, Title: e.Title, SealedAt: e.SealedAt / 1e9})
	}
	return d
}

func messageOf(m *history.Message) Message {
	v := Message{Object: "conversation.message", Seq: m.Seq, Turn: m.Turn, Episode: max(m.Episode, 1),
		CreatedAt: m.CreatedAt.Unix(), Tokens: m.Tokens, Flags: flagNames(m.Flags),
		Protocol: m.Protocol.String(), Role: m.Role, Text: string(m.Text()), Message: m.Raw}
	return v
}

func flagNames(f history.Flags) []string {
	names := []string{}
	if f&history.Superseded != 0 {
		names = append(names, flagSuperseded)
	}
	if f&(history.Forgotten|history.Erased) != 0 {
		names = append(names, flagForgotten)
	}
	if f&(history.Internal|history.Mixed) != 0 {
		names = append(names, flagRecallTools)
	}
	return names
}

// cut returns s cut to at most n bytes on a rune boundary, with an
// ellipsis when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return wire.RunePrefix(s, n) + "…"
}

// List is OpenAI's list shape. FirstID and LastID are null on an empty
// page.
type List[T any, ID any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	FirstID *ID    `json:"first_id"`
	LastID  *ID    `json:"last_id"`
	HasMore bool   `json:"has_more"`
}

func listOf[T any, ID any](data []T, more bool, id func(*T) ID) List[T, ID] {
	l := List[T, ID]{Object: "list", Data: data, HasMore: more}
	if l.Data == nil {
		l.Data = []T{}
	}
	if n := len(data); n > 0 {
		f, e := id(&data[0]), id(&data[n-1])
		l.FirstID, l.LastID = &f, &e
	}
	return l
}
