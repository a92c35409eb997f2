package history

import (
	"fmt"
	"sort"
	"time"

	"github.com/recallproxy/recall/wire"
)

// Flags mark stored messages that are kept but never sent.
type Flags uint8

const (
	// Superseded marks a message replaced by a client's edit or regeneration.
	Superseded Flags = 1 << iota
	// Forgotten marks a message removed by a forget operation.
	Forgotten
	// Erased marks a message removed by a hard forget: its record and
	// search entries are deleted (the range hides any not yet deleted).
	Erased
	// Internal marks a message Recall made and the client never saw: the
	// calls of its history tools (package tools) and their results. It is
	// sent like any other message, so the pairing of calls and results
	// holds, and merge does not compare it with a client's resent history.
	Internal
	// Mixed marks an answer that called Recall's history tools and the
	// client's: its Hash is that of the form the client got (its own calls
	// only), so that a client resending it matches.
	Mixed
	// Opening marks, in a Change, the first of the new messages of a
	// request that resent nothing stored: the client began a context of
	// its own there (an agent's new process or session, or its context
	// restarted from its own summary). The commit remembers where
	// (Meta.Session); no record keeps the flag.
	Opening
)

// Recorded are the flags a message's record keeps (the others live in the
// metadata's ranges).
const Recorded = Internal | Mixed

// Inactive is the set of flags that keep a message out of every context.
const Inactive = Superseded | Forgotten | Erased

// Message is one stored (or about to be stored) chat message.
type Message struct {
	// Seq is the message's position in its conversation, from 1. The store
	// assigns it on commit.
	Seq uint64
	// Turn is the turn the message belongs to, from 1. The store assigns it
	// on commit: a user message opens a new turn.
	Turn uint32
	// Episode is the episode the message belongs to, from 1. The store
	// assigns it on commit (Meta.Episode).
	Episode uint32
	// Role is the message's canonical role (wire.RoleUser, ...), what turn
	// and tool-call structure read.
	Role string
	// Protocol is the wire protocol Raw is in; its Codec reads and edits it.
	Protocol wire.Protocol
	// Raw is the message's JSON exactly as it arrived (a tool result longer
	// than the tenant's storage limit is stored cut, with a marker).
	Raw []byte
	// Tokens is the message's token count, computed once when it is written.
	Tokens int
	// Hash is the canonical hash of Raw (its protocol's Codec.Hash), used by the merge.
	Hash uint64
	// Flags mark inactive messages.
	Flags Flags
	// absent and absentLen are what the message's codec found missing
	// from Raw when it was committed (see learn), for a Raw of absentLen
	// bytes.
	absent    absent
	absentLen uint32
	// CreatedAt is when the message was committed.
	CreatedAt time.Time
	// Response, on the first stored message of a Responses API answer,
	// is the Response object POST returned, its output an empty array
	// (the output is the answer's stored items), packed
	// (responses.PackStored): GET /v1/responses/{id} returns it as
	// returned. nil on every other message. It is never sent upstream,
	// hashed or searched.
	Response []byte
}

// Codec returns the codec of the message's protocol.
func (m *Message) Codec() wire.Codec { return wire.For(m.Protocol) }

// Text returns the message's readable text, read by its protocol's codec
// (wire.Codec.Text) into a buffer of its own: what search indexes and
// what the history tools and the summariser show.
func (m *Message) Text() []byte { return m.Codec().Text(make([]byte, 0, len(m.Raw)), m.Raw) }

// Active reports whether the message may be sent upstream.
func (m *Message) Active() bool { return m.Flags&Inactive == 0 }

// Key names a conversation: the tenant's namespace, then its id.
type Key struct {
	// Tenant is the tenant's namespace (the tenant id, or a credential hash
	// in pass-through mode).
	Tenant string
	// Conversation is the client-chosen id.
	Conversation string
}

func (k Key) String() string { return k.Tenant + "/" + k.Conversation }

// ValidID reports whether id is an acceptable conversation id: 1-128
// characters of [A-Za-z0-9._:@-], other than "." and "..", which a path
// (/c/{conversation}/..., or a store's own keys) would read as a dot
// segment. It does not allocate.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 128 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == ':' || c == '@' || c == '-':
		default:
			return false
		}
	}
	return true
}

// Status is a conversation's state.
type Status string

// Conversation states.
const (
	StatusActive   Status = "active"
	StatusAwaiting Status = "awaiting_tool_results"
	StatusIdle     Status = "idle"
	StatusEnded    Status = "ended"
)

// Range is an inclusive range of sequence numbers made inactive as a
// whole. The metadata's ranges, not the message records, say which
// messages are inactive: a supersede or forget of any length is then one
// metadata write, atomic with the rest of its change.
type Range struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
	// Flags are what made the range inactive; 0 (the records of older
	// versions) means Superseded.
	Flags Flags `json:"flags,omitempty"`
}

// Meta is a conversation's metadata record, updated in the same atomic
// write as the messages it describes.
type Meta struct {
	// NextSeq is the sequence number the next appended message gets.
	NextSeq uint64 `json:"next_seq"`
	// FirstHash is the hash of the first active message; the merge uses it to
	// recognise a client that resends the conversation from its start.
	FirstHash uint64 `json:"first_hash,omitempty"`
	// LastTurn is the turn of the newest active message.
	LastTurn uint32 `json:"last_turn"`
	// Turns, Messages and Tokens count the active (sendable) history.
	Turns    int `json:"turns"`
	Messages int `json:"messages"`
	Tokens   int `json:"tokens"`
	// Cut is the cache-stable cut point: the first sequence number the last
	// curated context could include. Curation keeps it until the budget forces
	// the next step, so consecutive requests share their prefix.
	Cut uint64 `json:"cut,omitempty"`
	// Gaps are ranges of inactive messages, skipped when loading.
	Gaps []Range `json:"gaps,omitempty"`
	// Status is the conversation's state.
	Status Status `json:"status"`
	// Model and ResponseID are those of the last committed answer.
	Model      string `json:"model,omitempty"`
	ResponseID string `json:"response_id,omitempty"`
	// PromptTokens and CompletionTokens add up the upstream's reported usage.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// CreatedAt and UpdatedAt are Unix nanoseconds.
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
	// Version counts commits; a networked store uses it for optimistic
	// concurrency.
	Version uint64 `json:"version"`
	// Last is the newest commit if it was a chat exchange, nil otherwise:
	// a retry of that request replaces it (see MergeRetry).
	Last *Exchange `json:"last,omitempty"`
	// Episode is the open episode, from 1, and EpisodeFrom its first
	// sequence number. Sealing it (Change.Seal) opens the next.
	Episode     uint32 `json:"episode,omitempty"`
	EpisodeFrom uint64 `json:"episode_from,omitempty"`
	// Episodes are the newest sealed episodes, oldest first, at most
	// MaxEpisodes of them.
	Episodes []Episode `json:"episodes,omitempty"`
	// Title is the conversation's title: that of its newest titled episode.
	Title string `json:"title,omitempty"`
	// Summary covers the oldest turns; nil until a compaction lands.
	Summary *Summary `json:"summary,omitempty"`
	// Summaries counts the summaries that landed; SummaryPromptTokens and
	// SummaryCompletionTokens add up what the summariser spent.
	Summaries               int   `json:"summaries,omitempty"`
	SummaryPromptTokens     int64 `json:"summary_prompt_tokens,omitempty"`
	SummaryCompletionTokens int64 `json:"summary_completion_tokens,omitempty"`
	// Incarnation tells apart the conversations one id has named: a new,
	// random value each time the conversation is created (first written,
	// or written again after a delete). 0 in records written before it.
	Incarnation uint64 `json:"incarnation,omitempty"`
	// Epoch counts the changes that took messages out of every context
	// (forgets, soft or hard, and supersedes). A background job records it
	// with Incarnation when it reads the conversation, and its result is
	// discarded if either moved (SummaryChange): erased text never comes
	// back through work that was already running.
	Epoch uint64 `json:"epoch,omitempty"`
	// Metadata is the conversation's metadata as a client of OpenAI's
	// Conversations API set it: a JSON object of string values, kept as
	// its text ("" when none was set). Recall reads nothing in it.
	Metadata string `json:"metadata,omitempty"`
	// Tools reports that the conversation's main thread sends tool
	// definitions (an agent's does): a later request that sends none is a
	// side call (package thread). Once set it stays.
	Tools bool `json:"tools,omitempty"`
	// Session is where the client's newest context began (see Session);
	// zero (not Known) when no commit said so since the conversation was
	// made, or a supersede reached back past it. A value, not a pointer:
	// a delta client's every commit sets it, and would allocate.
	Session Session `json:"session,omitzero"`
}

// Session is where a client's newest context began in a conversation: at
// the first message of the newest exchange whose request resent nothing
// stored (its first new message carried Opening). An agent holds only its
// own context: what Recall injected from before it (earlier processes'
// turns) is history the agent never kept, and a summary the agent makes
// of its context covers From on, never what came before (MergeRestart).
type Session struct {
	// From is the first sequence number the opening exchange appended.
	From uint64 `json:"from"`
	// Before is the newest active message before From (Seq 0: none).
	Before Boundary `json:"before"`
	// Messages and Tokens counted the active history before From: what
	// a read past the session's messages has to reach back for.
	Messages int `json:"messages"`
	Tokens   int `json:"tokens"`
}

// Known reports whether s names where a context began (From 0: not
// known; sequence numbers start at 1).
func (s Session) Known() bool { return s.From != 0 }

// FlagsAt returns the flags the metadata gives message seq: those of the
// gap holding it, or 0. Stores add them to the flags of the record.
func (m *Meta) FlagsAt(seq uint64) Flags {
	g, ok := m.InGap(seq)
	if !ok {
		return 0
	}
	return g.flags()
}

func (r Range) flags() Flags {
	if r.Flags == 0 {
		return Superseded
	}
	return r.Flags
}

// InGap returns the gap holding seq, if any. Gaps are sorted and disjoint:
// a binary search.
func (m *Meta) InGap(seq uint64) (Range, bool) {
	i := sort.Search(len(m.Gaps), func(i int) bool { return m.Gaps[i].To >= seq })
	if i < len(m.Gaps) && m.Gaps[i].From <= seq {
		return m.Gaps[i], true
	}
	return Range{}, false
}

// addGap makes [from, to] inactive with flags, keeping the gaps sorted and
// disjoint: where it overlaps a gap the flags add up, and neighbours with
// the same flags merge, so the list grows only with edits that leave
// active messages between them.
func (m *Meta) addGap(from, to uint64, flags Flags) {
	if from > to {
		return
	}
	out := make([]Range, 0, len(m.Gaps)+2)
	add := func(r Range) {
		if r.From > r.To {
			return
		}
		r.Flags = r.flags()
		if n := len(out); n > 0 && out[n-1].Flags == r.Flags && out[n-1].To+1 == r.From {
			out[n-1].To = r.To
			return
		}
		out = append(out, r)
	}
	pos := from // the first seq of [from, to] not yet emitted
	for _, g := range m.Gaps {
		switch {
		case g.To < from || g.From > to: // apart
			if g.From > to && pos <= to {
				add(Range{From: pos, To: to, Flags: flags})
				pos = to + 1
			}
			add(g)
		default: // overlapping: before, shared, after
			if g.From < from {
				add(Range{From: g.From, To: from - 1, Flags: g.flags()})
			}
			if pos < g.From {
				add(Range{From: pos, To: g.From - 1, Flags: flags})
			}
			lo, hi := max(g.From, from), min(g.To, to)
			add(Range{From: lo, To: hi, Flags: g.flags() | flags})
			pos = max(pos, hi+1)
			if g.To > to {
				add(Range{From: to + 1, To: g.To, Flags: g.flags()})
			}
		}
	}
	if pos <= to {
		add(Range{From: pos, To: to, Flags: flags})
	}
	m.Gaps = out
}

// errorf formats a package error.
func errorf(format string, args ...any) error {
	return fmt.Errorf("history: "+format, args...)
}
