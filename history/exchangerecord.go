package history

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
)

// MaxExchangeRecords is how many exchange records a store keeps per
// conversation: appending more drops the oldest.
const MaxExchangeRecords = 200

// ExchangeRecord is what the inspector keeps of one upstream call made for
// a conversation: its protocols, status and timings, and the curation
// decisions behind the context it sent. It refers to messages by sequence
// number and never copies their text, so forgetting a message needs no
// scrubbing of the records; they are erased with the conversation.
//
// Its JSON is the conversation API's "conversation.exchange" object (the
// stores keep that JSON too).
type ExchangeRecord struct {
	// ID is "xch_" and 16 lowercase hex digits: ids of one conversation
	// sort (as strings) in the order the records were made, which is the
	// order stores keep them in (see NewExchangeID).
	ID     string `json:"id"`
	Object string `json:"object"`
	// CreatedAt is when the exchange began, in Unix seconds.
	CreatedAt int64 `json:"created_at"`
	// Kind is "chat", "tool_round" (the new messages answer tool calls),
	// "summary" (a summariser call) or "side" (a side call of an agent's,
	// sent as it came and not recorded as a turn: package thread).
	Kind string `json:"kind"`
	// Thread is the thread the exchange belongs to: "" or "main" the
	// conversation's main thread ("main" when X-Recall-Thread named it),
	// "side" a side call, else the name of the subagent's thread whose
	// record it is (the record of conversation c's thread t is kept with
	// c~t's, ThreadID). ThreadReason is why it was classified so
	// (thread.Reason*): for a side call the rule that made it one, for a
	// subagent's thread the header that named it ("agent_id" or
	// "header"), "header" for X-Recall-Thread: main, and "" for a turn of
	// the main thread no rule made a side call. A record written before
	// subagents' records named their thread has neither: the API names
	// the thread by the conversation's id (see api.threadOfRecord).
	Thread       string `json:"thread,omitempty"`
	ThreadReason string `json:"thread_reason,omitempty"`
	// Ingress and Upstream are the client's and the upstream's protocols.
	Ingress  string `json:"ingress"`
	Upstream string `json:"upstream"`
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	// Status is "answered", "upstream_error", "client_gone",
	// "commit_failed" or "failed"; HTTPStatus the status the client got.
	Status     string `json:"status"`
	HTTPStatus int    `json:"http_status"`
	// Error is the catalogue code of the error the exchange ended with,
	// if any (never an upstream's words: they may quote the messages).
	Error     string          `json:"error,omitempty"`
	LatencyMS ExchangeLatency `json:"latency_ms"`
	// Budget is the prompt budget curation worked to, in Recall's
	// estimate: the tenant's budget (or the model's window less the
	// answer's reserve), divided by Calibration when that is above 1.
	Budget int `json:"budget"`
	// Calibration is the ratio of the upstream's input count to Recall's
	// estimate the exchange was planned with, learned for its tenant and
	// model (1: none learned yet; package calibrate).
	Calibration float64        `json:"calibration"`
	Tokens      ExchangeTokens `json:"tokens"`
	// Summary is the summary sent, nil if none.
	Summary *SummaryUse `json:"summary"`
	// Included are the stored messages sent, as ranges of sequence
	// numbers; Dropped the stored turns not sent, with why; Cut the
	// stored tool results sent cut.
	Included []Span `json:"included"`
	// NewMessages is how many of the client's new messages were sent:
	// the first NewMessages seqs of Committed, if the exchange stored them.
	NewMessages int         `json:"new_messages"`
	Dropped     []Dropped   `json:"dropped"`
	Cut         []CutResult `json:"cut"`
	// RepairedCalls counts unanswered tool calls and orphan results left
	// out of the sent copy.
	RepairedCalls int `json:"repaired_calls"`
	// Committed are the sequence numbers the exchange stored (none if it
	// stored nothing).
	Committed []Span `json:"committed"`
	// CacheBreakpoint is the sequence number of the stored message whose
	// end carried the prompt-cache breakpoint Recall places (Anthropic's
	// cache_control, on the last history message sent); absent if it
	// placed none.
	CacheBreakpoint uint64 `json:"cache_breakpoint,omitempty"`
	// Incarnation is the conversation's Meta.Incarnation the exchange
	// worked on (0: not known). A store drops a record whose conversation
	// is gone or was made again since: a record never outlives a delete.
	Incarnation uint64 `json:"-"`
}

// ExchangeLatency are an exchange's times in milliseconds: to the
// upstream's first byte (its answer's headers), the upstream call whole,
// the exchange whole, and Recall's own share (Total less Upstream).
type ExchangeLatency struct {
	FirstByte int64 `json:"first_byte"`
	Upstream  int64 `json:"upstream"`
	Total     int64 `json:"total"`
	Recall    int64 `json:"recall"`
}

// ExchangeTokens are an exchange's token counts: Recall's estimates of
// what it sent (by kind of message, and whole), the whole estimate
// calibrated (EstimatedInput times the record's Calibration: what the
// upstream was expected to count), and what the upstream reported (0 if
// it reported nothing): ReportedInput counts every input token, Cached
// the part read from the provider's prompt cache, CacheCreation the part
// written to it (only Anthropic reports it).
//
// Instructions, Tools, Summary, History and New are the parts of the
// prompt: with tokens.ReplyPriming they add up to EstimatedInput. Tools
// are the definitions of the tools the client offered, which an agent's
// prompt may hold more of than of anything else.
type ExchangeTokens struct {
	Instructions    int `json:"instructions"`
	Tools           int `json:"tools"`
	Summary         int `json:"summary"`
	History         int `json:"history"`
	New             int `json:"new"`
	Output          int `json:"output"`
	EstimatedInput  int `json:"estimated_input"`
	CalibratedInput int `json:"calibrated_input"`
	ReportedInput   int `json:"reported_input"`
	Cached          int `json:"cached"`
	CacheCreation   int `json:"cache_creation"`
}

// SummaryUse is the summary an exchange sent: through which sequence
// number it covers, its tokens as sent, the role it was sent with (the
// client's first instruction's, "" in a record made before it was kept:
// system), and whether it was sent cut to fit (Tokens is then the cut's).
type SummaryUse struct {
	Through uint64 `json:"through"`
	Tokens  int    `json:"tokens"`
	Role    string `json:"role,omitempty"`
	Cut     bool   `json:"cut,omitempty"`
}

// Span is a range of sequence numbers, both ends included.
type Span struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// NewExchangeID returns the id of the exchange record numbered n
// ("xch_" and n in 16 hex digits). Numbers must grow within a
// conversation (a clock in nanoseconds made strictly increasing will do)
// so that ids sort in the order records are made.
func NewExchangeID(n uint64) string {
	const digits = "0123456789abcdef"
	b := [20]byte{'x', 'c', 'h', '_'}
	for i := 19; i >= 4; i-- {
		b[i] = digits[n&0xf]
		n >>= 4
	}
	return string(b[:])
}

// lastExchangeID numbers the records NextExchangeID makes.
var lastExchangeID atomic.Uint64

// NextExchangeID returns the id of a record made at now: now in
// nanoseconds, made strictly increasing across every caller in the
// process (the chat path and the summariser alike), so that the ids of
// one conversation's records sort in the order they were made and never
// collide.
func NextExchangeID(now time.Time) string {
	n := uint64(now.UnixNano())
	for {
		last := lastExchangeID.Load()
		if n <= last {
			n = last + 1
		}
		if lastExchangeID.CompareAndSwap(last, n) {
			return NewExchangeID(n)
		}
	}
}

// ValidExchangeID reports whether id has NewExchangeID's form.
func ValidExchangeID(id string) bool {
	if len(id) != 20 || id[:4] != "xch_" {
		return false
	}
	for _, c := range id[4:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// MarshalExchange encodes r as the stores keep it: its JSON.
func MarshalExchange(r *ExchangeRecord) ([]byte, error) {
	if b, ok := appendExchange(make([]byte, 0, 1024), r); ok {
		return b, nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("history: encode exchange %s: %w", r.ID, err)
	}
	return b, nil
}

// UnmarshalExchange decodes a record MarshalExchange encoded. A record
// written before calibration reads as made with none (Calibration 1, the
// calibrated input the estimate).
func UnmarshalExchange(b []byte) (ExchangeRecord, error) {
	var r ExchangeRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return ExchangeRecord{}, fmt.Errorf("history: decode exchange: %w", err)
	}
	if r.Calibration == 0 {
		r.Calibration, r.Tokens.CalibratedInput = 1, r.Tokens.EstimatedInput
	}
	return r, nil
}

// KeyedExchanges are records of one conversation, for AppendExchangeBatch.
type KeyedExchanges struct {
	Key     Key
	Records []ExchangeRecord
}

// ExchangeBatcher is implemented by a store that can append the records of
// several conversations in one write: records are written for every
// request, and one write per conversation would cost the request path's
// core a transaction each. Each conversation's records follow
// AppendExchanges' rules.
type ExchangeBatcher interface {
	AppendExchangeBatch(ctx context.Context, batch []KeyedExchanges) error
}

// TrimDue reports whether an append of recs (one conversation's) trims the
// conversation's records to MaxExchangeRecords: when one of their ids'
// numbers is a multiple of trimEvery (the low bits of a nanosecond
// clock: about one record in 64), or when they are trimEvery or more.
// Trimming reads the conversation's record keys (Badger every one,
// PostgreSQL the newest MaxExchangeRecords), which on every append cost
// more than the records themselves, and most trims delete
// nothing: a conversation holds fewer than the cap for its first 200
// exchanges (on PostgreSQL, 5,755 trims in the load script's recall-pg
// rows, every one deleting nothing, took a tenth of the database's
// time at one in 16). Between trims a conversation holds a few records
// past the cap (about trimEvery), which a store's Exchanges never lists.
func TrimDue(recs []ExchangeRecord) bool {
	if len(recs) >= trimEvery {
		return true
	}
	for i := range recs {
		if trimID(recs[i].ID) {
			return true
		}
	}
	return false
}

// TrimDueIDs is TrimDue for the records of these ids.
func TrimDueIDs(ids []string) bool {
	return len(ids) >= trimEvery || slices.ContainsFunc(ids, trimID)
}

// trimEvery is how many records an append takes, in the mean, between
// trims: a power of two no larger than 256 (trimID reads two hex digits).
const trimEvery = 64

// trimID reports whether id's number is a multiple of trimEvery (an id
// too short to say trims).
func trimID(id string) bool {
	if len(id) < 2 {
		return true
	}
	return (hexDigit(id[len(id)-2])<<4|hexDigit(id[len(id)-1]))%trimEvery == 0
}

// hexDigit is the value of the lowercase hex digit c (0 for any other).
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return 0
}

// ExchangeLog is implemented by every Store: it keeps a conversation's
// exchange records, the newest MaxExchangeRecords of them.
type ExchangeLog interface {
	// AppendExchanges adds recs (ids growing, see NewExchangeID) to k's
	// records, dropping the oldest past MaxExchangeRecords. Records of a
	// conversation that is not stored, or whose Incarnation is not the
	// record's (when the record's is not 0), are dropped: a conversation
	// deleted meanwhile keeps none.
	AppendExchanges(ctx context.Context, k Key, recs []ExchangeRecord) error
	// Exchanges returns up to limit of k's records, newest first,
	// starting after the record with id before ("": the newest).
	Exchanges(ctx context.Context, k Key, before string, limit int) ([]ExchangeRecord, error)
}
