package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/badgerstore/badgertest"
	"github.com/recallproxy/recall/tokens"
)

// importNow is the clock of the import tests.
var importNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// importFixture is an API handler over real Badger, as tenant "t".
type importFixture struct {
	t *testing.T
	s *badgerstore.Store
	h *api.Handler
}

func newImportFixture(t *testing.T) *importFixture {
	t.Helper()
	s := badgertest.Open(t)
	tenant := &config.Tenant{ID: "t"}
	h, err := api.New(api.Config{Store: s, Now: func() time.Time { return importNow },
		Authenticate: func(*fasthttp.RequestCtx) (auth.Caller, error) {
			return auth.Caller{Tenant: tenant, Namespace: "t"}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return &importFixture{t: t, s: s, h: h}
}

// call serves one request and returns its status and body.
func (f *importFixture) call(method, path, contentType, body string) (int, []byte) {
	var rc fasthttp.RequestCtx
	rc.Request.Header.SetMethod(method)
	rc.Request.SetRequestURI(api.Prefix + path)
	if contentType != "" {
		rc.Request.Header.SetContentType(contentType)
	}
	rc.Request.SetBodyString(body)
	f.h.Handle(&rc)
	return rc.Response.StatusCode(), append([]byte(nil), rc.Response.Body()...)
}

// importLines imports lines into conv.
func (f *importFixture) importLines(conv string, lines ...string) (int, []byte) {
	return f.call("POST", "conversations/"+conv+"/import", "application/x-ndjson", strings.Join(lines, "\n")+"\n")
}

// load returns conv's metadata and every stored message.
func (f *importFixture) load(conv string) (history.Meta, []history.Message) {
	f.t.Helper()
	k := history.Key{Tenant: "t", Conversation: conv}
	snap, err := f.s.Load(context.Background(), k, history.Query{})
	if err != nil {
		f.t.Fatal(err)
	}
	var msgs []history.Message
	err = f.s.Messages(context.Background(), k, 0, true, func(m history.Message) bool {
		m.Raw = append([]byte(nil), m.Raw...)
		msgs = append(msgs, m)
		return true
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return snap.Meta, msgs
}

// msgLine is an export's message line.
func msgLine(seq, turn, episode uint64, createdAt int64, tokens int, message string) string {
	b, _ := json.Marshal(map[string]any{"object": "conversation.message", "seq": seq, "turn": turn, "episode": episode,
		"created_at": createdAt, "tokens": tokens, "flags": []string{}, "message": json.RawMessage(message)})
	return string(b)
}

// headLine is an export's header line with summary s (nil: none).
func headLine(s map[string]any) string {
	b, _ := json.Marshal(map[string]any{"object": "conversation.export", "version": 1, "id": "x", "title": "",
		"created_at": importNow.Unix(), "cut": 0, "summary": s})
	return string(b)
}

const (
	userMsg = `{"role":"user","content":"hello"}`
	asstMsg = `{"role":"assistant","content":"hi there"}`
)

var at = importNow.Add(-time.Hour).Unix()

// errParam returns an OpenAI error body's param.
func errParam(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Param   string `json:"param"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error: %s", body)
	}
	return e.Error.Param
}

func TestImportRefusesABadFileNamingItsLineAndStoresNothing(t *testing.T) {
	f := newImportFixture(t)
	for i, tc := range []struct {
		name  string
		lines []string
		param string // the line named
	}{
		{"created_at overflows", []string{msgLine(1, 1, 1, 9200000000000000000, 1, userMsg)}, "line 1"},
		{"created_at overflows below", []string{msgLine(1, 1, 1, -9200000000000000000, 1, userMsg)}, "line 1"},
		{"created_at before 2000", []string{msgLine(1, 1, 1, at, 1, userMsg), msgLine(2, 1, 1, 946684799, 1, asstMsg)}, "line 2"},
		{"created_at past tomorrow", []string{headLine(nil), msgLine(1, 1, 1, importNow.Add(25*time.Hour).Unix(), 1, userMsg)}, "line 2"},
		{"negative summary tokens", []string{headLine(map[string]any{"text": "s", "through": 1, "turns": 1, "tokens": -5}),
			msgLine(1, 1, 1, at, 1, userMsg), msgLine(2, 1, 1, at, 1, asstMsg)}, "line 1"},
		{"negative summary turns", []string{headLine(map[string]any{"text": "s", "through": 1, "turns": -1, "tokens": 5}),
			msgLine(1, 1, 1, at, 1, userMsg)}, "line 1"},
		{"summary past the last message", []string{headLine(map[string]any{"text": "s", "through": 3, "turns": 1, "tokens": 5}),
			msgLine(1, 1, 1, at, 1, userMsg), msgLine(2, 1, 1, at, 1, asstMsg)}, "line 1"},
		{"summary at overflows", []string{headLine(map[string]any{"text": "s", "through": 1, "turns": 1, "tokens": 5, "at": -9200000000000000000}),
			msgLine(1, 1, 1, at, 1, userMsg)}, "line 1"},
		{"negative tokens", []string{msgLine(1, 1, 1, at, -1, userMsg)}, "line 1"},
		{"bad message after a blank line", []string{msgLine(1, 1, 1, at, 1, userMsg), "", msgLine(2, 1, 1, at, 1, `{"role":"assistant","content":7}`)}, "line 3"},
		{"orphan tool result", []string{msgLine(1, 1, 1, at, 1, userMsg), msgLine(2, 1, 1, at, 1, `{"role":"tool","tool_call_id":"c1","content":"x"}`)}, "line 2"},
		{"system message", []string{msgLine(1, 1, 1, at, 1, `{"role":"system","content":"x"}`)}, "line 1"},
	} {
		conv := fmt.Sprint("bad-", i)
		t.Run(tc.name, func(t *testing.T) {
			status, body := f.importLines(conv, tc.lines...)
			if status != 400 {
				t.Fatalf("got %d %s, want 400", status, body)
			}
			if got := errParam(t, body); got != tc.param {
				t.Errorf("got param %q, want %q (%s)", got, tc.param, body)
			}
			if m, msgs := f.load(conv); m.Version != 0 || len(msgs) != 0 {
				t.Errorf("a refused import stored version %d, %d messages", m.Version, len(msgs))
			}
		})
	}
}

func TestImportRenumbersTurnsFromRoles(t *testing.T) {
	f := newImportFixture(t)
	// Turns near 2^32: the next commit's turn would wrap, putting the
	// next question and its answer in different turns.
	const top = 4294967295
	status, body := f.importLines("wrap", msgLine(1, top, top, at, 1, userMsg), msgLine(2, top, top, at, 1, asstMsg))
	if status != 201 {
		t.Fatalf("import: %d %s", status, body)
	}
	if status, body := f.call("POST", "conversations/wrap/messages", "application/json",
		`{"messages":[{"role":"user","content":"next"},{"role":"assistant","content":"answer"}]}`); status != 200 {
		t.Fatalf("memorize: %d %s", status, body)
	}
	m, msgs := f.load("wrap")
	var got []uint32
	for _, msg := range msgs {
		got = append(got, msg.Turn)
	}
	if want := []uint32{1, 1, 2, 2}; !slices.Equal(got, want) {
		t.Errorf("got turns %v, want %v", got, want)
	}
	if m.LastTurn != 2 || m.Turns != 2 || m.Episode != 1 {
		t.Errorf("got last turn %d, turns %d, episode %d; want 2, 2, 1", m.LastTurn, m.Turns, m.Episode)
	}

	// A file that puts a question and its answer in different turns, or
	// skips turns, gets the turns the chat path would have given them;
	// inactive messages delimit turns as they did when they were active.
	forgotten := strings.Replace(msgLine(3, 2, 1, at, 1, `{"role":"user","content":"q2"}`), `"flags":[]`, `"flags":["forgotten"]`, 1)
	status, body = f.importLines("grouped",
		msgLine(1, 1, 1, at, 1, userMsg),
		msgLine(2, 7, 1, at, 1, asstMsg),
		forgotten,
		msgLine(4, 9, 5, at, 1, `{"role":"assistant","content":"a2"}`),
		msgLine(5, 9, 5, at, 1, `{"role":"user","content":"q3"}`))
	if status != 201 {
		t.Fatalf("import: %d %s", status, body)
	}
	m, msgs = f.load("grouped")
	got = got[:0]
	var eps []uint32
	for _, msg := range msgs {
		got, eps = append(got, msg.Turn), append(eps, msg.Episode)
	}
	if want := []uint32{1, 1, 2, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("got turns %v, want %v", got, want)
	}
	if want := []uint32{1, 1, 1, 2, 2}; !slices.Equal(eps, want) {
		t.Errorf("got episodes %v, want %v", eps, want)
	}
	if m.Turns != 3 || m.LastTurn != 3 || m.Episode != 2 || m.EpisodeFrom != 4 {
		t.Errorf("got turns %d, last turn %d, episode %d from %d; want 3, 3, 2 from 4", m.Turns, m.LastTurn, m.Episode, m.EpisodeFrom)
	}
}

func TestImportCountsTokensItself(t *testing.T) {
	f := newImportFixture(t)
	big := `{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor ", 100<<10/18) + `"}`
	status, body := f.importLines("big", msgLine(1, 1, 1, at, 1, big), msgLine(2, 1, 1, at, 0, asstMsg))
	if status != 201 {
		t.Fatalf("import: %d %s", status, body)
	}
	c := &tokens.Counter{}
	m, msgs := f.load("big")
	want := c.Message(tokens.O200k, []byte(big)) + c.Message(tokens.O200k, []byte(asstMsg))
	if want < 10000 {
		t.Fatalf("the big message counts %d tokens: not big enough for the test", want)
	}
	if m.Tokens != want {
		t.Errorf("got %d tokens stored, want %d", m.Tokens, want)
	}
	if got := msgs[0].Tokens; got != c.Message(tokens.O200k, []byte(big)) {
		t.Errorf("got %d tokens for the message claiming 1, want %d", got, c.Message(tokens.O200k, []byte(big)))
	}
	if msgs[0].Hash != chat.Hash([]byte(big)) {
		t.Errorf("got hash %x, want %x", msgs[0].Hash, chat.Hash([]byte(big)))
	}
}

func TestImportRecomputesTheSummary(t *testing.T) {
	f := newImportFixture(t)
	// A summary claiming 999 turns would hold back every later
	// compaction (turns stored minus turns summarised stays negative).
	status, body := f.importLines("sum",
		headLine(map[string]any{"text": "they said hello", "through": 2, "turns": 999, "tokens": 1, "at": importNow.Add(-time.Minute).UnixNano()}),
		msgLine(1, 1, 1, at, 1, userMsg), msgLine(2, 1, 1, at, 1, asstMsg),
		msgLine(3, 2, 1, at, 1, userMsg), msgLine(4, 2, 1, at, 1, asstMsg))
	if status != 201 {
		t.Fatalf("import: %d %s", status, body)
	}
	m, _ := f.load("sum")
	if m.Summary == nil {
		t.Fatal("summary not stored")
	}
	c := &tokens.Counter{}
	wantTokens := c.Message(tokens.O200k, plan.Inject(chat.RoleSystem, "they said hello"))
	if m.Summary.Turns != 1 || m.Summary.Tokens != wantTokens || m.Summary.Through != 2 {
		t.Errorf("got summary turns %d, tokens %d, through %d; want 1, %d, 2", m.Summary.Turns, m.Summary.Tokens, m.Summary.Through, wantTokens)
	}
}
