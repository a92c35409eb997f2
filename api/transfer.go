package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/history/tokens"
	"github.com/recallproxy/recall/rewrite"
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
	c.rc.SetStatusCode(200)
	c.rc.SetContentType(ndjson)
	c.rc.Response.Header.Set("Content-Disposition", `attachment; filename="`+key.Conversation+`.jsonl"`)
	// The writer outlives the handler: it uses only what was copied above.
	c.rc.SetBodyStreamWriter(func(w *bufio.Writer) {
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

// importConv serves POST /conversations/{id}/import: an export's lines,
// as is, into an empty conversation (409 otherwise). Each message keeps
// its seq, turn, episode, flags, time and token count, so the context
// afterwards is the one before the export. Messages are validated as a
// chat request's are, and the active ones' tool pairing too.
func (c *call) importConv() error {
	ct := c.rc.Request.Header.ContentType()
	if i := bytes.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	switch string(bytes.ToLower(bytes.TrimSpace(ct))) {
	case ndjson, "application/jsonl", "application/x-jsonlines":
	default:
		return errMediaType
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
		last := msgs[len(msgs)-1].Seq
		if head.Cut > 0 && head.Cut <= last {
			ch.Cut = head.Cut
		}
		if s := head.Summary; s != nil && s.Through > 0 && s.Through < last {
			ch.Summary = &history.SummaryChange{Summary: *s}
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
		return errNotEmpty
	}
	m, err := c.h.cfg.Store.Commit(c.ctx, c.key, ch)
	if err == history.ErrConflict {
		return errNotEmpty // written between the check and the commit
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
	Message   json.RawMessage `json:"message"`
}

// parseImport reads an import body: an optional header line, then at
// least one message line, seq ascending.
func (c *call) parseImport(body []byte) (*ExportHeader, []history.Message, error) {
	var head *ExportHeader
	var msgs []history.Message
	var raws [][]byte
	n := 0
	for len(body) > 0 {
		var ln []byte
		ln, body, _ = bytes.Cut(body, []byte{'\n'})
		n++
		ln = bytes.TrimSpace(ln)
		if len(ln) == 0 {
			continue
		}
		param := "line " + strconv.Itoa(n)
		if rewrite.CheckDepth(ln) != nil {
			return nil, nil, errBadRequest(param, "Invalid "+param+": not a JSON object nested at most 256 levels.")
		}
		var l importLine
		if err := json.Unmarshal(ln, &l); err != nil {
			return nil, nil, errBadRequest(param, "Invalid "+param+": expected one JSON object per line, as export writes them.")
		}
		switch l.Object {
		case "conversation.export":
			if head != nil || len(msgs) > 0 {
				return nil, nil, errBadRequest(param, "Invalid "+param+": the export header may only be the first line.")
			}
			if l.ExportHeader.Version != exportVersion {
				return nil, nil, errBadRequest(param, "Invalid "+param+": unknown export version (expected 1).")
			}
			h := l.ExportHeader
			head = &h
			continue
		case "conversation.message":
		default:
			return nil, nil, errBadRequest(param, `Invalid `+param+`: expected "object": "conversation.export" or "conversation.message".`)
		}
		m := history.Message{Seq: l.Seq, Turn: l.Turn, Episode: l.Episode, Tokens: l.Tokens, CreatedAt: time.Unix(l.CreatedAt, 0)}
		if len(msgs) > 0 {
			prev := msgs[len(msgs)-1]
			if m.Seq <= prev.Seq || m.Turn < prev.Turn || m.Episode < prev.Episode {
				return nil, nil, errBadRequest(param, "Invalid "+param+": seq must ascend, turn and episode never go back.")
			}
		}
		if m.Seq == 0 || m.Seq > maxSeq || m.Turn == 0 || m.Episode == 0 || m.Tokens < 0 || len(l.Message) == 0 {
			return nil, nil, errBadRequest(param, "Invalid "+param+": seq (at most 2^40), turn and episode start at 1, tokens is not negative, message is required.")
		}
		for _, f := range l.Flags {
			switch f {
			case flagSuperseded:
				m.Flags |= history.Superseded
			case flagForgotten:
				m.Flags |= history.Forgotten
			default:
				return nil, nil, errBadRequest(param, "Invalid "+param+": flags are superseded and forgotten.")
			}
		}
		m.Raw = bytes.Clone(l.Message)
		msgs = append(msgs, m)
		raws = append(raws, m.Raw)
	}
	if len(msgs) == 0 {
		return nil, nil, errBadRequest("", "Invalid import: no message line.")
	}
	// The messages, validated exactly as a chat request's.
	var doc bytes.Buffer
	doc.WriteString(`{"messages":[`)
	doc.Write(bytes.Join(raws, []byte{','}))
	doc.WriteString(`]}`)
	req, err := rewrite.ParseRequest(doc.Bytes())
	if err != nil {
		return nil, nil, err
	}
	enc := tokens.O200k
	if e := c.caller.Tenant.History.Encoding; e != "" {
		enc = tokens.Encoding(e)
	}
	var active []history.Message
	for i := range msgs {
		msgs[i].Role = req.Messages[i].Role
		if msgs[i].Role == history.RoleUser || msgs[i].Role == history.RoleAssistant || msgs[i].Role == history.RoleTool {
			msgs[i].Hash = rewrite.Hash(msgs[i].Raw)
		} else {
			return nil, nil, errBadRequest("messages["+strconv.Itoa(i)+"].role", "Invalid message "+strconv.Itoa(i)+": stored messages are user, assistant or tool messages.")
		}
		if msgs[i].Tokens == 0 {
			msgs[i].Tokens = c.h.cfg.Counter.Message(enc, msgs[i].Raw)
		}
		if msgs[i].Active() {
			active = append(active, msgs[i])
		}
	}
	if err := history.CheckNew(nil, active); err != nil {
		return nil, nil, err
	}
	return head, msgs, nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
