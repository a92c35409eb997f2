package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/wire"
)

// crashKey is the pass-through credential of the crash and shutdown tests.
const crashKey = "sk-crash-client"

// passNamespace is the history namespace of a pass-through credential on
// the implicit default tenant.
func passNamespace(bearer string) string { return auth.Namespace("default", bearer) }

// TestCrashLosesNoAcknowledgedTurn drives concurrent conversations (plain
// turns and tool-call turns, streamed or not, each through one of the
// three APIs: chat completions, Responses and Messages) through a child
// `recall serve` over the default upstream (chat and Responses native,
// Messages bridged to chat), kills it with SIGKILL at random moments and
// restarts it on the same data directory. Afterwards every conversation
// holds only whole turns, and every acknowledged turn: a non-streamed
// answer received in full, or a stream whose acknowledging event the
// client read (chat: the finish_reason chunk; Responses:
// response.completed; Messages: the message_delta with stop_reason). The
// client stops reading there, as a client may: the SDKs do not need what
// follows.
//
// 10 kills over 24 conversations by default; RECALL_CRASH_LONG=1 runs 100
// kills over 50.
func TestCrashLosesNoAcknowledgedTurn(t *testing.T) {
	kills, convs := 10, 24
	if os.Getenv("RECALL_CRASH_LONG") == "1" {
		kills, convs = 100, 50
	}
	crashUnderLoad(t, kills, convs)
}

// TestCrashLosesNoAcknowledgedTurnOverAnthropic is the same over an
// anthropic upstream: Messages native, chat completions and Responses
// bridged to Messages.
//
// 5 kills over 12 conversations by default; RECALL_CRASH_LONG=1 runs 50
// kills over 50.
func TestCrashLosesNoAcknowledgedTurnOverAnthropic(t *testing.T) {
	kills, convs := 5, 12
	if os.Getenv("RECALL_CRASH_LONG") == "1" {
		kills, convs = 50, 50
	}
	crashUnderLoad(t, kills, convs, "RECALL_UPSTREAM_PROTOCOL=anthropic")
}

// crashUnderLoad runs the crash test: convs conversations over every API,
// kills SIGKILLs of a child started with env, and the checks.
func crashUnderLoad(t *testing.T, kills, convs int, env ...string) {
	up := upstreamtest.NewTB(t, upstreamtest.WithKeepRequests(0))
	dir := t.TempDir()
	c := newChild(t, dir, up.URL())
	// Compact after almost every turn, so that kills land mid-compaction
	// too: a conversation is then as before it or fully compacted.
	cfgFile := filepath.Join(t.TempDir(), "recall.yaml")
	if err := os.WriteFile(cfgFile, []byte("defaults:\n  summary: { enabled: true, trigger_turns: 1, keep_turns: 0 }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.env = append(append(c.env, "RECALL_CONFIG="+cfgFile), env...)
	c.start()
	l := newLoad(up, c.url())
	l.apis = allAPIs
	drivers := l.run(t, kills, convs, func(k int, rng *rand.Rand) {
		c.kill()
		c.start()
	})
	stopChild(t, c)
	l.check(t)

	store, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	checkAll(t, store, drivers, kills, true)
	checkEveryAPI(t, drivers, l.apis)
}

// newLoad returns the load of drivers that send to urls, in turn.
func newLoad(up *upstreamtest.Server, urls ...string) *load {
	l := &load{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}, urls: urls, up: up}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// run drives convs concurrent conversations and calls disrupt kills
// times, each after a random number of acknowledged turns, with the
// drivers held while it runs (requests in flight then fail as they may).
// It returns the drivers once the load stopped.
func (l *load) run(t *testing.T, kills, convs int, disrupt func(k int, rng *rand.Rand)) []*driver {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (kills %d, conversations %d)", seed, kills, convs)
	rng := rand.New(rand.NewPCG(seed, 1))
	tr := l.client.Transport.(*http.Transport)
	defer tr.CloseIdleConnections()
	watchdog := time.AfterFunc(time.Duration(kills)*20*time.Second, func() {
		l.mu.Lock()
		l.stop, l.timedOut = true, true
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer watchdog.Stop()

	var wg sync.WaitGroup
	drivers := make([]*driver, convs)
	for i := range drivers {
		drivers[i] = &driver{l: l, id: i, rng: rand.New(rand.NewPCG(seed, uint64(i)+2))}
		wg.Go(drivers[i].run)
	}

	// waitAcks blocks until n more turns are acknowledged (or the watchdog
	// stops the load).
	waitAcks := func(n int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		target := l.acks + n
		for l.acks < target && !l.stop {
			l.cond.Wait()
		}
	}
	for k := range kills {
		n := 2 + rng.IntN(3*convs/2)
		waitAcks(n)
		l.mu.Lock()
		l.killed = true
		acks := l.acks
		l.mu.Unlock()
		t.Logf("kill %d after %d acknowledged turns (%d more)", k+1, acks, n)
		disrupt(k, rng)
		tr.CloseIdleConnections() // connections to a dead child
		l.mu.Lock()
		l.gen++
		l.killed = false
		l.cond.Broadcast()
		l.mu.Unlock()
	}
	waitAcks(convs) // the last restart serves too
	l.mu.Lock()
	l.stop = true
	l.cond.Broadcast()
	l.mu.Unlock()
	wg.Wait()
	if l.timedOut {
		t.Fatal("load did not progress in time")
	}
	return drivers
}

// check reports the failures of requests no disruption explains.
func (l *load) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.unexpected {
		t.Errorf("unexpected failure (server not killed): %v", e)
	}
}

// stopChild stops c with SIGINT and checks that it exits cleanly.
func stopChild(t *testing.T, c *child) {
	t.Helper()
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code := c.wait(ctx); code != 0 {
		t.Errorf("child exited %d after SIGINT, want 0", code)
	}
}

// checkAll checks every conversation the drivers made against store; with
// wantSummaries, that some got a summary (the load compacts after every
// turn) and that each summary is whole.
func checkAll(t *testing.T, store history.Store, drivers []*driver, kills int, wantSummaries bool) {
	t.Helper()
	checked, turns, partial, landed, summarised := 0, 0, 0, 0, 0
	for _, d := range drivers {
		for _, cv := range d.done {
			turns += cv.acked
			if cv.inflight != nil {
				partial++
			}
			if checkConversation(t, store, cv) {
				landed++
			}
			if wantSummaries && checkSummary(t, store, cv) {
				summarised++
			}
			checked++
		}
	}
	t.Logf("%d kills, %d conversations checked, %d acknowledged turns present, %d conversations retired mid-request (%d of those turns committed whole), %d with a summary",
		kills, checked, turns, partial, landed, summarised)
	if wantSummaries && summarised == 0 {
		t.Error("no conversation got a summary: the test proves nothing about compaction")
	}
	if turns == 0 {
		t.Error("got no acknowledged turns, want the load to have made progress")
	}
}

// checkEveryAPI checks that each of apis had acknowledged turns, so that
// the test proves something about each.
func checkEveryAPI(t *testing.T, drivers []*driver, apis []string) {
	t.Helper()
	acked := map[string]int{}
	for _, d := range drivers {
		for _, cv := range d.done {
			acked[cv.api] += cv.acked
		}
	}
	t.Logf("acknowledged turns by API: %v", acked)
	for _, api := range apis {
		if acked[api] == 0 {
			t.Errorf("got no acknowledged %s turns, want some", api)
		}
	}
}

// load is the state the drivers and the killer share.
type load struct {
	client *http.Client
	urls   []string // the servers: turn i of driver d goes to urls[(d+i)%len]
	up     *upstreamtest.Server
	apis   []string // the APIs conversations are driven through (none: chat)

	mu         sync.Mutex
	cond       *sync.Cond
	gen        int  // child generation
	killed     bool // the current generation is being killed
	stop       bool
	timedOut   bool
	acks       int
	unexpected []error
	disrupted  []error // failures while a disruption ran
}

// msg is one chat message in a comparable form.
type msg struct {
	role, content, toolCallID string
	calls                     []string
	raw                       string // as sent, for client messages
}

func (m msg) String() string {
	s := m.role
	if m.toolCallID != "" {
		s += "(" + m.toolCallID + ")"
	}
	s += ":" + m.content
	if len(m.calls) > 0 {
		s += " calls=" + strings.Join(m.calls, ",")
	}
	return s
}

// conversation is what a client knows of one conversation.
type conversation struct {
	id       string
	api      string // the API every request of it goes through
	history  []msg  // acknowledged messages: sent and answered in full
	acked    int    // acknowledged exchanges
	inflight []msg  // the request that failed, whose fate is unknown
	pending  []string
}

// driver runs one client: a sequence of conversations, each retired at its
// first failed request (whose turn may or may not have been committed).
type driver struct {
	l    *load
	id   int
	rng  *rand.Rand
	done []*conversation
}

// newConversation starts the driver's next conversation, on an API of
// the load's picked at random.
func (d *driver) newConversation() *conversation {
	cv := &conversation{id: fmt.Sprintf("c%d-r%d", d.id, len(d.done)), api: apiChat}
	if apis := d.l.apis; len(apis) > 0 {
		cv.api = apis[d.rng.IntN(len(apis))]
	}
	return cv
}

func (d *driver) run() {
	l := d.l
	cv := d.newConversation()
	defer func() { d.done = append(d.done, cv) }()
	for turn := 0; ; turn++ {
		l.mu.Lock()
		for l.killed && !l.stop {
			l.cond.Wait()
		}
		if l.stop {
			l.mu.Unlock()
			return
		}
		gen := l.gen
		l.mu.Unlock()

		var out []msg
		if len(cv.pending) > 0 {
			for _, id := range cv.pending {
				out = append(out, clientMsg(msg{role: "tool", toolCallID: id, content: "result of " + id}))
			}
		} else {
			out = append(out, clientMsg(msg{role: "user", content: fmt.Sprintf("%s turn %d", cv.id, turn)}))
		}
		reply := upstreamtest.Reply{Chunks: 1 + d.rng.IntN(6)}
		if d.rng.IntN(3) == 0 {
			reply.ToolCalls = make([]upstreamtest.ToolCall, 1+d.rng.IntN(2))
			for i := range reply.ToolCalls {
				reply.ToolCalls[i] = upstreamtest.ToolCall{Name: "lookup", Arguments: `{"q":"x"}`}
			}
		}
		if d.rng.IntN(4) == 0 {
			reply.Delay = time.Duration(d.rng.IntN(20)) * time.Millisecond
		}
		l.up.Enqueue(reply)
		answer, err := exchangeAPI(l.client, l.urls[(d.id+turn)%len(l.urls)], cv.api, cv.id, out, d.rng.IntN(2) == 0)
		if err != nil {
			l.mu.Lock()
			if l.gen == gen && !l.killed {
				l.unexpected = append(l.unexpected, fmt.Errorf("%s (%s): %w", cv.id, cv.api, err))
			} else {
				l.disrupted = append(l.disrupted, fmt.Errorf("%s (%s): %w", cv.id, cv.api, err))
			}
			l.mu.Unlock()
			cv.inflight = out
			d.done = append(d.done, cv)
			cv = d.newConversation()
			continue
		}
		cv.history = append(append(cv.history, out...), answer)
		cv.acked++
		cv.pending = answer.calls
		l.mu.Lock()
		l.acks++
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}

// clientMsg fills m.raw with the JSON a client sends for m.
func clientMsg(m msg) msg {
	v := map[string]string{"role": m.role, "content": m.content}
	if m.toolCallID != "" {
		v["tool_call_id"] = m.toolCallID
	}
	b, _ := json.Marshal(v)
	m.raw = string(b)
	return m
}

// exchange sends msgs on conv and returns the answer, or an error unless
// the answer was acknowledged: a 200 and a complete body or, streamed, the
// chunk that carries finish_reason (the rest of the stream is not read).
func exchange(client *http.Client, url, conv string, msgs []msg, stream bool) (msg, error) {
	raws := make([]string, len(msgs))
	for i, m := range msgs {
		raws[i] = m.raw
	}
	body := fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"messages":[%s]}`, stream, strings.Join(raws, ","))
	a := msg{role: "assistant"}
	return postAnswer(client, url+"/v1/chat/completions", conv, body, false, stream, answerReader{
		whole: func(b []byte) (msg, error) {
			m := gjson.GetBytes(b, "choices.0.message")
			if !m.Exists() {
				return msg{}, fmt.Errorf("no message in %s", b)
			}
			a.content = m.Get("content").Str
			for _, c := range m.Get("tool_calls").Array() {
				a.calls = append(a.calls, c.Get("id").Str)
			}
			return a, nil
		},
		end: "stream ended without finish_reason",
		event: func(data string) (msg, bool, error) {
			if gjson.Get(data, "error").Exists() {
				return msg{}, true, fmt.Errorf("error event: %s", data)
			}
			delta := gjson.Get(data, "choices.0.delta")
			a.content += delta.Get("content").Str
			for _, c := range delta.Get("tool_calls").Array() {
				if id := c.Get("id").Str; id != "" {
					a.calls = append(a.calls, id)
				}
			}
			if gjson.Get(data, "choices.0.finish_reason").Type == gjson.String {
				return a, true, nil // acknowledged: the turn must be durable now
			}
			return msg{}, false, nil
		},
	})
}

// answerReader reads an API's answer: whole from a complete body, event
// from each data line of a stream until it reports the answer's end (see
// readEvents; end is the error of a stream that ends first).
type answerReader struct {
	whole func(body []byte) (msg, error)
	end   string
	event func(data string) (a msg, done bool, err error)
}

// postAnswer posts body to url on conv (see postOK), within 30 seconds,
// and reads the answer with r: whole when not streamed, event by event
// when streamed.
func postAnswer(client *http.Client, url, conv, body string, anthropic, stream bool, r answerReader) (msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := postOK(ctx, client, url, conv, body, anthropic)
	if err != nil {
		return msg{}, err
	}
	defer resp.Body.Close()
	if !stream {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return msg{}, err
		}
		return r.whole(b)
	}
	return readEvents(resp.Body, r.end, r.event)
}

// postOK posts the JSON body to url on conv as crashKey's client, the key
// in the header the API wants (anthropic: X-Api-Key with a version), and
// returns the answer once it is a 200, its body the caller's to close.
func postOK(ctx context.Context, client *http.Client, url, conv, body string, anthropic bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if anthropic {
		req.Header.Set("X-Api-Key", crashKey)
		req.Header.Set("Anthropic-Version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+crashKey)
	}
	req.Header.Set("X-Conversation-ID", conv)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return resp, nil
}

// readEvents hands each data line of a stream to on until on reports
// the answer's end (done, with the answer or an error); a stream that
// ends first is the error end.
func readEvents(r io.Reader, end string, on func(data string) (a msg, done bool, err error)) (msg, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if a, done, err := on(data); done {
			return a, err
		}
	}
	if err := sc.Err(); err != nil {
		return msg{}, err
	}
	return msg{}, errors.New(end)
}

// checkConversation checks cv as stored, compared as atoms (so that any
// API's messages compare, whatever protocol they are stored in): every
// acknowledged message present, in order; after them nothing, or the one
// request whose fate the client does not know, whole, with its answer;
// and the whole conversation valid for every provider (every tool call
// answered, no orphan result), but for an assistant's calls at the very
// end that await their results. It reports whether the unacknowledged
// request was committed.
func checkConversation(t *testing.T, store history.Store, cv *conversation) (landed bool) {
	t.Helper()
	var stored []history.Message
	err := store.Messages(context.Background(), history.Key{Tenant: passNamespace(crashKey), Conversation: cv.id}, 0, true,
		func(m history.Message) bool { stored = append(stored, m); return true })
	if err != nil {
		t.Fatalf("%s: %v", cv.id, err)
	}
	var got []string
	raws := make([]json.RawMessage, len(stored))
	allChat := true
	for i, m := range stored {
		if !m.Active() {
			t.Errorf("%s: message %d is inactive, want none superseded", cv.id, m.Seq)
		}
		if got, err = storedAtoms(got, m); err != nil {
			t.Errorf("%s: %v", cv.id, err)
		}
		raws[i] = m.Raw
		allChat = allChat && m.Protocol == wire.ChatCompletions
	}
	var want []string
	for _, m := range cv.history {
		want = m.atoms(want)
	}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Errorf("%s (%s): stored %q, want the acknowledged %q first", cv.id, cv.api, got, want)
		return false
	}
	rest := got[len(want):]
	if len(rest) > 0 {
		var inflight []string
		for _, m := range cv.inflight {
			inflight = m.atoms(inflight)
		}
		ok := cv.inflight != nil && len(rest) > len(inflight) && slices.Equal(rest[:len(inflight)], inflight)
		for _, a := range rest[len(inflight):] {
			ok = ok && (strings.HasPrefix(a, "assistant:") || strings.HasPrefix(a, "call:"))
		}
		if !ok {
			t.Errorf("%s (%s): stored %q after the acknowledged turns, want nothing or the unacknowledged %q whole with its answer",
				cv.id, cv.api, rest, inflight)
		}
	}
	if err := checkAtoms(got); err != nil {
		t.Errorf("%s (%s): stored history %q is not whole: %v", cv.id, cv.api, got, err)
	}
	if n := len(raws); allChat && n > 0 && gjson.GetBytes(raws[n-1], "tool_calls.#").Int() > 0 {
		raws = raws[:n-1] // its results are not sent yet
	}
	if allChat && len(raws) > 0 {
		if e := upstreamtest.ValidateMessages(raws); e != nil {
			t.Errorf("%s: stored history %q is not whole: %s", cv.id, got, e.Message)
		}
	}
	return len(rest) > 0
}

// storedMsg reads a stored message into its comparable form.
func storedMsg(raw []byte) msg {
	r := gjson.ParseBytes(raw)
	m := msg{role: r.Get("role").Str, content: r.Get("content").Str, toolCallID: r.Get("tool_call_id").Str}
	for _, c := range r.Get("tool_calls").Array() {
		m.calls = append(m.calls, c.Get("id").Str)
	}
	return m
}

// checkSummary checks cv's summary, if it has one, against its stored
// messages: it ends at a turn's end, counts the turns it covers, and (the
// fake summariser lists every user message it is given) holds every user
// message up to its Through. Together with the messages after Through,
// that is the whole conversation: a compaction killed half-way left it as
// before or fully compacted, never with turns missing. It reports whether
// cv has a summary.
func checkSummary(t *testing.T, store history.Store, cv *conversation) bool {
	t.Helper()
	k := history.Key{Tenant: passNamespace(crashKey), Conversation: cv.id}
	snap, err := store.Load(context.Background(), k, history.Query{After: ^uint64(0)})
	if err != nil {
		t.Fatalf("%s: %v", cv.id, err)
	}
	s := snap.Meta.Summary
	if s == nil {
		return false
	}
	var stored []history.Message
	if err := store.Messages(context.Background(), k, 0, false, func(m history.Message) bool { stored = append(stored, m); return true }); err != nil {
		t.Fatalf("%s: %v", cv.id, err)
	}
	users := 0
	for i, m := range stored {
		if m.Seq > s.Through {
			if i == 0 || m.Role != "user" || stored[i-1].Seq != s.Through {
				var roles []string
				for _, m := range stored {
					roles = append(roles, fmt.Sprintf("%d:%s/%s", m.Seq, m.Protocol, m.Role))
				}
				t.Errorf("%s (%s): the summary through %d does not end at a turn's end: stored %v", cv.id, cv.api, s.Through, roles)
			}
			break
		}
		if m.Role == "user" {
			users++
			if text := storedText(m); !strings.Contains(s.Text, text) {
				t.Errorf("%s: the summary through %d lacks %q: %q", cv.id, s.Through, text, s.Text)
			}
		}
	}
	if s.Turns != users || s.Through > stored[len(stored)-1].Seq {
		t.Errorf("%s: summary covers %d turns through %d, want %d turns of the %d stored messages", cv.id, s.Turns, s.Through, users, len(stored))
	}
	return true
}
