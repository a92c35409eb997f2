package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// ExportHeader is the first line of an export: what a restore needs
// besides the messages for an identical context (the summary and the
// cache-stable cut point).
type ExportHeader struct {
	Object    string           `json:"object"` // "conversation.export"
	Version   int              `json:"version"`
	ID        string           `json:"id"`
	Title     string           `json:"title"`
	CreatedAt int64            `json:"created_at"`
	Cut       uint64           `json:"cut"`
	Summary   *history.Summary `json:"summary"`
}

// maxSeq bounds an imported sequence number, far above any real
// conversation's and far below where the store's counters would wrap.
const maxSeq = 1 << 40

// exportVersion is the version of the export format.
const exportVersion = 1

// ndjson is the media type of exports and imports.
const ndjson = "application/x-ndjson"

// export serves GET /conversations/{id}/export: a header line, then one
// line per stored message (inactive ones included, with their flags),
// oldest first, streamed as read. The status is decided before the first
// byte: a failure past it ends the stream early, and a reader knows it by
// the missing messages (the header's conversation has them counted).
func (c *call) export() error {
	m, err := c.meta()
	if err != nil {
		return err
	}
	head, err := json.Marshal(ExportHeader{Object: "conversation.export", Version: exportVersion, ID: c.key.Conversation,
		Title: m.Title, CreatedAt: m.CreatedAt / 1e9, Cut: m.Cut, Summary: m.Summary})
	if err != nil {
		return err
	}
	store, key, log, timeout := c.h.cfg.Store, c.key, c.h.log, c.h.cfg.Timeout
	leave := c.leave // the stream holds the heavy slot until it ends
	c.leave = nil
	c.rc.SetStatusCode(200)
	c.rc.SetContentType(ndjson)
	c.rc.Response.Header.Set("Content-Disposition", `attachment; filename="`+key.Conversation+`.jsonl"`)
	// The writer outlives the handler: it uses only what was copied above.
	c.rc.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer leave()
		ctx, cancel := context.WithTimeout(context.Background(), 10*timeout)
		defer cancel()
		w.Write(head)
		w.WriteByte('\n')
		var line []byte
		var werr error
		err := store.Messages(ctx, key, 0, true, func(msg history.Message) bool {
			line, werr = json.Marshal(messageOf(&msg))
			if werr != nil {
				return false
			}
			w.Write(line)
			if werr = w.WriteByte('\n'); werr != nil {
				return false
			}
			if w.Buffered() > 32<<10 {
				werr = w.Flush()
			}
			return werr == nil
		})
		if err != nil {
			log.Error("export failed", "tenant", key.Tenant, "conversation", key.Conversation, "error", err)
		}
	})
	return nil
}

// importConv serves POST /conversations/{id}/import: an export's lines
// into an empty conversation (409 otherwise). Each message keeps its seq,
// flags, time and episode grouping, so the context afterwards is the one
// before the export; what Recall counts or derives itself (turns, token
// counts, hashes, the summary's turns and tokens) is recomputed, never
// taken from the file (see parseImport). Messages are validated as a chat
// request's are, and the active ones' tool pairing too. A bad file is a
// 400 naming its line, and stores nothing.
func (c *call) importConv() error {
	ct := c.rc.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	switch string(bytes.ToLower(bytes.TrimSpace(ct))) {
	case ndjson, "application/jsonl", "application/x-jsonlines":
	default:
		return apierr.ImportMediaType
	}
	body, err := c.body()
	if err != nil {
		return err
	}
	head, msgs, err := c.parseImport(body)
	if err != nil {
		return err
	}
	ch := history.Change{Import: true, Append: msgs, Now: c.now()}
	if head != nil {
		if last := msgs[len(msgs)-1].Seq; head.Cut > 0 && head.Cut <= last {
			ch.Cut = head.Cut
		}
		if head.Summary != nil {
			ch.Summary = &history.SummaryChange{Summary: *head.Summary}
		}
	}

	release, err := c.lock()
	if err != nil {
		return err
	}
	defer release()
	snap, err := c.h.cfg.Store.Load(c.ctx, c.key, history.Query{})
	if err != nil {
		return err
	}
	if snap.Meta.Version != 0 {
		return apierr.NotEmpty
	}
	m, err := c.h.cfg.Store.Commit(c.ctx, c.key, ch)
	if err == history.ErrConflict {
		return apierr.NotEmpty // written between the check and the commit
	}
	if err != nil {
		return err
	}
	return c.reply(201, c.detail(&m))
}

// importLine is one line of an import: a header or a message.
type importLine struct {
	Object string `json:"object"`
	ExportHeader
	Seq       uint64          `json:"seq"`
	Turn      uint32          `json:"turn"`
	Episode   uint32          `json:"episode"`
	CreatedAt int64           `json:"created_at"`
	Tokens    int             `json:"tokens"`
	Flags     []string        `json:"flags"`
	Protocol  string          `json:"protocol"`
	Message   json.RawMessage `json:"message"`
}

// minImportTime is the earliest time an import may carry: no message of
// a Recall conversation predates 2000.
var minImportTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// maxImportSkew is how far past the clock an imported time may be: the
// exporting machine's clock may run ahead of this one's.
const maxImportSkew = 24 * time.Hour

// parseImport reads an import body: an optional header line, then at
// least one message line, seq ascending. It takes from the file only what
// a conversation cannot rebuild: each message's JSON, seq, flags, time
// and episode grouping, and the header's summary text, cut point and
// times. Everything else is Recall's to compute, as the chat path does at
// write time, because the curation trusts it:
//
//   - Turn: from roles, in seq order, as history.Apply numbers appended
//     messages (a user message opens a turn, and so does the first
//     message), over every line, inactive ones too, so their grouping is
//     the one the conversation had. The file's turn numbers are ignored
//     (a turn near 2^32 would wrap the next commit's).
//   - Episode: renumbered from 1, one more at each change of the file's
//     episode, which may never go back.
//   - Tokens: counted by the same Counter and encoding memorize uses (a
//     message claiming 1 token would otherwise pass the budget whole).
//   - Hash: of the message's JSON.
//   - The summary's turns (the turns of the active messages it covers:
//     a summary claiming more would hold back the next compaction) and
//     tokens (as plan injects it).
//
// Times must lie between 2000 and a day past the clock; a token count or
// summary turn count in the file must not be negative; a summary must
// cover at least one message and none past the last (as history.Change
// checks a landing summary: Through < NextSeq). Any problem is a 400
// naming the file's 1-based line.
func (c *call) parseImport(body []byte) (*ExportHeader, []history.Message, error) {
	p := importParse{c: c, lo: minImportTime, hi: c.h.cfg.Now().Add(maxImportSkew),
		enc: tokens.For("", c.caller.Tenant.History.Encoding)} // no model: O200k, as for unknown models
	n := 0
	for len(body) > 0 {
		var ln []byte
		ln, body, _ = bytes.Cut(body, []byte{'\n'})
		n++
		ln = bytes.TrimSpace(ln)
		if len(ln) == 0 {
			continue
		}
		if err := p.line(n, ln); err != nil {
			return nil, nil, err
		}
	}
	if len(p.msgs) == 0 {
		return nil, nil, apierr.InvalidValue("", "Invalid import: no message line.")
	}
	numberTurns(p.msgs)
	active, err := checkImportedActive(p.msgs, p.lines)
	if err != nil {
		return nil, nil, err
	}
	if p.head != nil && p.head.Summary != nil {
		if err := p.completeSummary(active); err != nil {
			return nil, nil, err
		}
	}
	return p.head, p.msgs, nil
}

// importParse is parseImport's state while it reads the lines.
type importParse struct {
	c        *call
	lo, hi   time.Time // the range a time in the file must lie in
	enc      tokens.Encoding
	head     *ExportHeader
	headLine int
	msgs     []history.Message
	lines    []int  // the file line of each message
	episodes uint32 // the file's episode of the previous message
}

// badLine is the 400 for a problem on the file's n-th line.
func badLine(n int, what string) error {
	param := "line " + strconv.Itoa(n)
	return apierr.InvalidValue(param, "Invalid "+param+": "+what)
}

// line reads the file's n-th line, ln, not blank: the header or a
// message.
func (p *importParse) line(n int, ln []byte) error {
	if chat.CheckDepth(ln) != nil {
		return badLine(n, "not a JSON object nested at most 256 levels.")
	}
	var l importLine
	if err := json.Unmarshal(ln, &l); err != nil {
		return badLine(n, "expected one JSON object per line, as export writes them.")
	}
	switch l.Object {
	case "conversation.export":
		return p.header(n, &l)
	case "conversation.message":
		m, err := p.message(n, &l)
		if err != nil {
			return err
		}
		p.msgs = append(p.msgs, m)
		p.lines = append(p.lines, n)
		return nil
	default:
		return badLine(n, `expected "object": "conversation.export" or "conversation.message".`)
	}
}

// header reads the export header on line n: only the first line, of a
// known version, with a well-formed summary if any.
func (p *importParse) header(n int, l *importLine) error {
	if p.head != nil || len(p.msgs) > 0 {
		return badLine(n, "the export header may only be the first line.")
	}
	if l.ExportHeader.Version != exportVersion {
		return badLine(n, "unknown export version (expected 1).")
	}
	h := l.ExportHeader
	if s := h.Summary; s != nil {
		if s.Text == "" || s.Through == 0 || s.Turns < 0 || s.Tokens < 0 {
			return badLine(n, "a summary has text, covers through a seq of at least 1, and its turns and tokens are not negative.")
		}
		if s.At != 0 && !inRange(time.Unix(0, s.At), p.lo, p.hi) {
			return badLine(n, "the summary's at (Unix nanoseconds) must lie between 2000 and a day from now.")
		}
	}
	p.head, p.headLine = &h, n
	return nil
}

// message reads the message on line n: its numbers checked against the
// previous message's, its episode renumbered, its flags, and its JSON
// validated by its protocol's codec; its hash and tokens computed.
func (p *importParse) message(n int, l *importLine) (history.Message, error) {
	if len(p.msgs) > 0 {
		if l.Seq <= p.msgs[len(p.msgs)-1].Seq || l.Episode < p.episodes {
			return history.Message{}, badLine(n, "seq must ascend, and episode never goes back.")
		}
	}
	if l.Seq == 0 || l.Seq > maxSeq || l.Turn == 0 || l.Episode == 0 || l.Tokens < 0 || len(l.Message) == 0 {
		return history.Message{}, badLine(n, "seq (at most 2^40), turn and episode start at 1, tokens is not negative, message is required.")
	}
	if l.CreatedAt < p.lo.Unix() || l.CreatedAt > p.hi.Unix() {
		return history.Message{}, badLine(n, "created_at (Unix seconds) must lie between 2000 and a day from now.")
	}
	m := history.Message{Seq: l.Seq, Episode: 1, CreatedAt: time.Unix(l.CreatedAt, 0)}
	if len(p.msgs) > 0 {
		m.Episode = p.msgs[len(p.msgs)-1].Episode
		if l.Episode > p.episodes {
			m.Episode++
		}
	}
	p.episodes = l.Episode
	for _, f := range l.Flags {
		switch f {
		case flagSuperseded:
			m.Flags |= history.Superseded
		case flagForgotten:
			m.Flags |= history.Forgotten
		default:
			return history.Message{}, badLine(n, "flags are superseded and forgotten.")
		}
	}
	if l.Protocol != "" {
		proto, ok := wire.Named(l.Protocol)
		if !ok {
			return history.Message{}, badLine(n, `protocol is "chat.completions", "responses" or "messages".`)
		}
		m.Protocol = proto
	}
	if err := importedBody(n, l, &m); err != nil {
		return history.Message{}, err
	}
	switch m.Role {
	case wire.RoleUser, wire.RoleAssistant, wire.RoleTool:
	default:
		return history.Message{}, badLine(n, "stored messages are user, assistant or tool messages.")
	}
	m.Hash = m.Codec().Hash(m.Raw)
	m.Tokens = plan.Count(p.c.h.cfg.Counter, p.enc, m.Protocol, m.Raw)
	return m, nil
}

// importedBody sets m's role and JSON from line n's message, validated
// as m's protocol reads it: a chat message exactly as a chat request's,
// another protocol's as a JSON object its codec reads (as export writes
// it).
func importedBody(n int, l *importLine, m *history.Message) error {
	if m.Protocol == wire.ChatCompletions {
		req, err := chat.ParseRequest(append(append([]byte(`{"messages":[`), l.Message...), ']', '}'))
		if err != nil {
			var re *chat.Error
			if errors.As(err, &re) {
				return badLine(n, strings.ReplaceAll(re.Message, "messages[0]", "message"))
			}
			return err
		}
		m.Role, m.Raw = req.Messages[0].Role, bytes.Clone(req.Messages[0].Raw)
		return nil
	}
	codec := wire.For(m.Protocol)
	if _, err := codec.Decode(l.Message); err != nil || l.Message[0] != '{' {
		return badLine(n, "message is not a "+l.Protocol+" message.")
	}
	m.Role, m.Raw = codec.Role(l.Message), bytes.Clone(l.Message)
	return nil
}

// numberTurns numbers msgs' turns from their roles, as history.Apply
// numbers appended messages.
func numberTurns(msgs []history.Message) {
	var turn uint32
	for i := range msgs {
		if msgs[i].Role == wire.RoleUser || turn == 0 {
			turn++
		}
		msgs[i].Turn = turn
	}
}

// checkImportedActive returns the active messages of msgs, checked as a
// new conversation's (a tool message answers a call before it); lines
// are msgs' file lines, for the error.
func checkImportedActive(msgs []history.Message, lines []int) ([]history.Message, error) {
	var active []history.Message
	var activeLines []int
	for i := range msgs {
		if msgs[i].Active() {
			active = append(active, msgs[i])
			activeLines = append(activeLines, lines[i])
		}
	}
	if err := history.CheckNew(nil, active); err != nil {
		var orphan *history.OrphanResultError
		if errors.As(err, &orphan) {
			return nil, badLine(activeLines[orphan.Index], "a tool message must answer a tool call of an assistant message before it.")
		}
		return nil, err
	}
	return active, nil
}

// completeSummary checks the header's summary against the messages and
// computes what is Recall's: its turns (over active), tokens and, when
// the file has none, its time.
func (p *importParse) completeSummary(active []history.Message) error {
	s := *p.head.Summary
	if last := p.msgs[len(p.msgs)-1].Seq; s.Through > last {
		return badLine(p.headLine, "the summary covers through seq "+
			strconv.FormatUint(s.Through, 10)+", past the last message's ("+strconv.FormatUint(last, 10)+").")
	}
	s.Turns = coveredTurns(active, s.Through)
	s.Tokens = p.c.h.cfg.Counter.Message(p.enc, plan.Inject(chat.RoleSystem, s.Text))
	if s.At == 0 {
		s.At = p.c.now()
	}
	p.head.Summary = &s
	return nil
}

// coveredTurns counts the turns of the active messages up to through.
func coveredTurns(active []history.Message, through uint64) int {
	n := 0
	var turn uint32
	for i := range active {
		if active[i].Seq > through {
			break
		}
		if active[i].Turn != turn {
			n++
			turn = active[i].Turn
		}
	}
	return n
}

// inRange reports whether t lies in [lo, hi].
func inRange(t, lo, hi time.Time) bool { return !t.Before(lo) && !t.After(hi) }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
