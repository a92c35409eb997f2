package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/plan"
	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/summary"
)

// TestProtocolMatrix: every ingress protocol (chat completions, Responses,
// Messages, Gemini) over every kind of upstream (openai, which takes the
// Responses API; chat, chat completions only; anthropic, Messages only;
// gemini), streamed and not, each cell one conversation on a harness of
// its own, through nine aspects in order:
//
//   - memory: the second turn's upstream request carries the first turn;
//   - tool loop: the fake calls the client's tool, the client's result
//     (only it) goes back over the same ingress, the fake (which checks
//     the pairing) answers;
//   - switch: the same, the result sent over the next ingress protocol
//     (chat → Responses → Messages → Gemini → chat) and answered in that
//     protocol's shape;
//   - search: the search API finds a word of an answer and of each tool
//     result in the conversation;
//   - summary: a fifth turn crosses trigger_turns, the job lands (waited
//     on), and the next request carries the summary and none of the
//     answers it covers;
//   - render: every exchange's render=messages sent view equals what the
//     fake received for it;
//   - export/import: the export imported into a new conversation stores
//     the same messages (protocol, role, hash, bytes) and sends the same
//     context as the original on the next turn;
//   - forget: the first turn hard-forgotten is in no API view, no search
//     hit, no summary, no exchange render, no log line and not in the next
//     upstream request, which carries the turns the dropped summary
//     covered again; nor in the summary then made again;
//   - resend: on a conversation of its own, a client that resends its
//     whole history on every request, over another protocol at every
//     turn (protocol_matrix_resend_test.go): what goes upstream and
//     what is stored hold each message once, in order.
//
// The test logs the table of cells and aspects (pass, FAIL, or skip with
// the finding that skips it).
func TestProtocolMatrix(t *testing.T) {
	ingresses := []*matrixIngress{
		{name: "chat", c: &chatClient, path: func(bool) string { return "/v1/chat/completions" }, auth: bearer},
		{name: "responses", c: &responsesClient, path: func(bool) string { return "/v1/responses" }, auth: bearer},
		{name: "messages", c: &messagesClient, path: func(bool) string { return "/v1/messages" },
			auth: func(k string) map[string]string {
				return map[string]string{"x-api-key": k, "anthropic-version": "2023-06-01"}
			}},
		{name: "gemini", c: &geminiClient, path: func(stream bool) string {
			if stream {
				return "/v1beta/models/m1:streamGenerateContent?alt=sse"
			}
			return "/v1beta/models/m1:generateContent"
		}, auth: func(k string) map[string]string { return map[string]string{"x-goog-api-key": k} }},
	}
	upstreams := []struct{ tenant, name string }{{"oa", "openai"}, {"ch", "chat"}, {"an", "anthropic"}, {"ge", "gemini"}}
	table := &matrixTable{cells: map[string]map[string]string{}}
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("the protocol matrix, its cells run in %v (switch: the tool result goes over the next ingress, "+
			"chat → responses → messages → gemini → chat):\n%s", time.Since(start).Round(time.Millisecond), table.markdown())
	})
	for _, up := range upstreams {
		for i, in := range ingresses {
			for _, stream := range []bool{false, true} {
				row := in.name + "→" + up.name
				if stream {
					row += " streamed"
				}
				table.rows = append(table.rows, row)
				t.Run(strings.NewReplacer("→", "-over-", " ", "-").Replace(row), func(t *testing.T) {
					t.Parallel()
					o := fourUpstreams()
					o.Global, o.Summary = summaryOn(4, 2), func(*summary.Config) {}
					c := &matrixCell{h: e2etest.New(t, o), in: in, sw: ingresses[(i+1)%len(ingresses)],
						tenant: up.tenant, stream: stream, conv: "matrix", row: row, table: table}
					for k := range ingresses {
						c.order = append(c.order, ingresses[(i+k)%len(ingresses)])
					}
					c.run(t)
				})
			}
		}
	}
}

// matrixAspects are the table's columns, in the order a cell runs them.
var matrixAspects = []string{"memory", "tool loop", "switch", "search", "summary", "render", "export/import", "forget", "resend"}

// matrixFindings are the cells' aspects known to fail, each skipped
// naming what is wrong: key "row/aspect".
var matrixFindings = map[string]string{}

func bearer(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }

// matrixIngress is one client protocol of the matrix: a toolClient (its
// messages and its reading of answers) and the route and key header it
// is sent with.
type matrixIngress struct {
	name string
	c    *toolClient
	path func(stream bool) string
	auth func(key string) map[string]string
}

// matrixCell is one conversation of one cell, on its own harness: the
// client sends only its new messages, Recall supplies the rest.
type matrixCell struct {
	h      *e2etest.Harness
	in, sw *matrixIngress // the cell's ingress, and the one the switched result goes over
	// order are the ingresses in the switch's order, from in: the
	// resend aspect's turns go over each.
	order  []*matrixIngress
	tenant string
	stream bool
	conv   string
	row    string
	table  *matrixTable
	// sent are the upstream requests of the conversation's exchanges, in
	// order.
	sent []upstreamtest.Received
}

// Words the aspects look for: each in one message only.
const (
	matrixSecret   = "ZX81Q"                              // turn 1's user text, hard-forgotten last
	matrixAnswer2  = "Hello Ada, a fine mathematician."   // turn 2's answer
	matrixResult3  = "quokka drizzle"                     // turn 3's tool result
	matrixAnswer3  = "Take a marmalade umbrella."         // turn 3's answer
	matrixResult4  = "pelican fog"                        // turn 4's tool result, over the switched ingress
	matrixAnswer4  = "Wear a tangerine scarf."            // turn 4's answer
	matrixUser1    = "Remember: my locker code is ZX81Q." // turn 1
	matrixAnswer1  = "Stored safely."                     // turn 1's answer
	matrixCopyConv = "matrix-copy"
)

// run runs the aspects in order, each as a subtest whose outcome goes in
// the table.
func (c *matrixCell) run(t *testing.T) {
	for i, a := range []func(t *testing.T){c.memory, c.toolLoop, c.switched, c.search, c.summary, c.render, c.exportImport, c.forget, c.resend} {
		name := matrixAspects[i]
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			// The harness's helpers fail the aspect, not the cell.
			prev := c.h.T
			c.h.T = t
			defer func() {
				c.h.T = prev
				switch {
				case t.Skipped():
					c.table.set(c.row, name, "skip("+matrixFindings[c.row+"/"+name]+")")
				case t.Failed():
					c.table.set(c.row, name, "FAIL")
				default:
					c.table.set(c.row, name, "pass")
				}
			}()
			if f, ok := matrixFindings[c.row+"/"+name]; ok {
				t.Skip(f)
			}
			a(t)
		})
	}
}

// send sends msgs over in on conv, waits for the commit and returns what
// the client heard and the upstream request the exchange made (the last
// one that is not a summariser's), which the fake must have accepted.
func (c *matrixCell) send(t *testing.T, in *matrixIngress, conv string, msgs ...string) (heard, upstreamtest.Received) {
	t.Helper()
	return c.sendBody(t, in, conv, in.c.body(msgs, c.stream))
}

// sendBody is send with the request's body given whole.
func (c *matrixCell) sendBody(t *testing.T, in *matrixIngress, conv, body string) (heard, upstreamtest.Received) {
	t.Helper()
	headers := in.auth("rk-" + c.tenant)
	headers["Content-Type"], headers["X-Conversation-ID"] = "application/json", conv
	before := len(c.h.Up.Requests())
	r := c.h.PostHeaders(in.path(c.stream), headers, body)
	d := c.h.WaitDone(conv)
	if r.Status != 200 || !d.Committed {
		t.Fatalf("%s over %s: %d %s (committed %v)", body, in.name, r.Status, r.Body, d.Committed)
	}
	var up upstreamtest.Received
	reqs := c.h.Up.Requests()
	for _, q := range reqs[before:] {
		if q.Rejected != nil {
			t.Fatalf("the fake refused %s: %s\n%s", q.Path, q.Rejected.Message, q.Body)
		}
		if !q.Summary {
			up = q
		}
	}
	if up.Body == nil {
		t.Fatalf("%s over %s: no upstream request", body, in.name)
	}
	if conv == c.conv {
		c.sent = append(c.sent, up)
	}
	return in.c.read(t, r.Body, c.stream), up
}

// sentHolds fails the test unless the upstream request holds every one of
// words, and holds none of absent.
func sentHolds(t *testing.T, what string, up upstreamtest.Received, words []string, absent ...string) {
	t.Helper()
	body := unescaped(up.Body)
	for _, w := range words {
		if !strings.Contains(body, w) {
			t.Errorf("%s: the upstream request lacks %q: %s", what, w, up.Body)
		}
	}
	for _, w := range absent {
		if strings.Contains(body, w) {
			t.Errorf("%s: the upstream request holds %q: %s", what, w, up.Body)
		}
	}
}

// unescaped is body with its JSON strings' escapes undone where they
// matter to the words looked for (a newline, a quote).
func unescaped(body []byte) string {
	return strings.NewReplacer(`\n`, "\n", `\"`, `"`).Replace(string(body))
}

func (c *matrixCell) memory(t *testing.T) {
	c.h.Up.Enqueue(upstreamtest.Reply{Content: matrixAnswer1})
	if got, _ := c.send(t, c.in, c.conv, c.in.c.user(matrixUser1)); got.text != matrixAnswer1 {
		t.Errorf("turn 1: got %q, want %q", got.text, matrixAnswer1)
	}
	c.h.Up.Enqueue(upstreamtest.Reply{Content: matrixAnswer2})
	got, up := c.send(t, c.in, c.conv, c.in.c.user("My name is Ada."))
	if got.text != matrixAnswer2 {
		t.Errorf("turn 2: got %q, want %q", got.text, matrixAnswer2)
	}
	sentHolds(t, "turn 2", up, []string{matrixUser1, matrixAnswer1, "My name is Ada."})
}

// loop makes one tool loop: ask over c.in, the fake calls get_weather,
// the result goes over res, the fake answers answer.
func (c *matrixCell) loop(t *testing.T, res *matrixIngress, ask, result, answer string, earlier []string) {
	c.h.Up.Enqueue(upstreamtest.Reply{ToolCalls: []upstreamtest.ToolCall{{Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		upstreamtest.Reply{Content: answer})
	got, up := c.send(t, c.in, c.conv, c.in.c.user(ask))
	if len(got.calls) != 1 {
		t.Fatalf("%s: got calls %q (text %q), want the get_weather call", ask, got.calls, got.text)
	}
	sentHolds(t, ask, up, earlier)
	got, up = c.send(t, res, c.conv, res.c.result(got.calls[0], result))
	if got.text != answer || len(got.calls) != 0 {
		t.Errorf("the result over %s: got %q and calls %q, want %q", res.name, got.text, got.calls, answer)
	}
	sentHolds(t, "the result over "+res.name, up, append(earlier, ask, result))
}

func (c *matrixCell) toolLoop(t *testing.T) {
	c.loop(t, c.in, "What is the weather in Oslo?", matrixResult3, matrixAnswer3, []string{matrixUser1, matrixAnswer2})
}

func (c *matrixCell) switched(t *testing.T) {
	c.loop(t, c.sw, "And in Bergen?", matrixResult4, matrixAnswer4, []string{matrixUser1, matrixAnswer2, matrixResult3, matrixAnswer3})
}

func (c *matrixCell) search(t *testing.T) {
	for _, q := range []string{"mathematician", "marmalade", "quokka", "pelican", "tangerine"} {
		a := c.h.API("rk-"+c.tenant, "", "GET", "/recall/v1/search?q="+q, "")
		hit := gjson.GetBytes(a.Body, `data.#(conversation=="`+c.conv+`")`)
		if a.Status != 200 || !strings.Contains(strings.ToLower(hit.Get("text").Str), q) {
			t.Errorf("search for %q: %d %s, want a hit in %s whose text holds it", q, a.Status, a.Body, c.conv)
		}
	}
}

// hitConversations are the conversations of a search answer's hits.
func hitConversations(body []byte) []string {
	var out []string
	for _, r := range gjson.GetBytes(body, "data.#.conversation").Array() {
		out = append(out, r.Str)
	}
	return out
}

func (c *matrixCell) summary(t *testing.T) {
	c.send(t, c.in, c.conv, c.in.c.user("Who am I?"))
	if d := c.h.WaitJob(c.conv); d.Outcome != summary.Landed {
		t.Fatalf("the summary job after turn 5: %+v, want landed", d)
	}
	// The summariser called the cell's upstream in its own protocol: a
	// path (the method after ':' aside) the conversation's exchanges
	// took.
	route := func(p string) string { r, _, _ := strings.Cut(p, ":"); return r }
	var routes []string
	for _, q := range c.sent {
		routes = append(routes, route(q.Path))
	}
	calls := c.h.Up.SummaryCalls()
	if len(calls) != 1 || !slices.Contains(routes, route(calls[0].Path)) {
		t.Fatalf("got %d summariser calls (to %v), want one to a path of %q", len(calls), paths(calls), routes)
	}
	// Its transcript reads every message of turns 1 to 3 through its
	// codec: the answers and the tool's result too.
	sentHolds(t, "the summariser's request", calls[0], []string{matrixUser1, matrixAnswer1, matrixAnswer2, matrixResult3, matrixAnswer3},
		matrixAnswer4)
	_, up := c.send(t, c.in, c.conv, c.in.c.user("What do you remember?"))
	// The fake's summary keeps the user lines of the turns it covers
	// (1 to 3; 4 and 5 are kept whole): their answers go no more.
	sentHolds(t, "after the summary", up, []string{strings.TrimSuffix(plan.SummaryPrefix, "\n"), matrixUser1, matrixAnswer4, "Who am I?"},
		matrixAnswer1, matrixAnswer2, matrixAnswer3)
}

// paths are the paths of reqs.
func paths(reqs []upstreamtest.Received) []string {
	var out []string
	for _, q := range reqs {
		out = append(out, q.Path)
	}
	return out
}

func (c *matrixCell) render(t *testing.T) {
	flush(t, c.h)
	a := c.h.API("rk-"+c.tenant, "", "GET", convBase+c.conv+"/exchanges?limit=200", "")
	var l exchangeList
	a.JSON(t, &l)
	var recs []exchangeView
	for _, r := range l.Data {
		if r.Kind != "summary" && r.Kind != "side" {
			recs = append(recs, r)
		}
	}
	if len(recs) != len(c.sent) {
		t.Fatalf("got %d exchange records, want one per upstream request (%d): %s", len(recs), len(c.sent), a.Body)
	}
	slices.Reverse(recs)
	for i, r := range recs {
		x := renderExchangeAs(t, c.h, "rk-"+c.tenant, c.conv, r.ID)
		if x.Sent == nil || !x.Sent.Complete {
			t.Errorf("exchange %d (%s): sent %+v, want a complete context", i+1, r.ID, x.Sent)
			continue
		}
		if err := sameAsSent(x, c.sent[i]); err != nil {
			t.Errorf("exchange %d (%s, %s → %s): %v", i+1, r.ID, r.Ingress, r.Upstream, err)
		}
	}
}

// sameAsSent reports how a render's sent view differs from the request
// the upstream received: its messages must equal the request's
// conversation (messages, input items, contents) as JSON, where the
// instructions (the summary) lead them when the protocol carries
// instructions among them, and are read in its system field otherwise.
// Anthropic's cache breakpoints are compared too: the render places
// Recall's where the request carried it.
func sameAsSent(x renderedExchange, up upstreamtest.Received) error {
	got := append([]json.RawMessage{}, x.Sent.Messages...)
	want := up.Messages
	system := ""
	root := gjson.ParseBytes(up.Body)
	for _, p := range []string{"system", "system.#.text", "systemInstruction.parts.#.text", "instructions"} {
		v := root.Get(p)
		if v.IsArray() {
			for _, s := range v.Array() {
				if s.Type == gjson.String {
					system += s.Str + "\n"
				}
			}
		} else if v.Type == gjson.String {
			system += v.Str + "\n"
		}
	}
	inline := len(want) == len(x.Sent.Instructions)+len(got) && len(x.Sent.Instructions) > 0
	if inline {
		got = append(append([]json.RawMessage{}, x.Sent.Instructions...), got...)
	} else {
		// No client instructions: the request's system is the summary
		// alone, or nothing.
		var ins []string
		for _, m := range x.Sent.Instructions {
			ins = append(ins, jsonStrings(m)...)
		}
		if got, want := strings.Join(ins, "\n"), strings.TrimSuffix(system, "\n"); got != want {
			return fmt.Errorf("the render's instructions read %q, the request's system %q", got, want)
		}
	}
	if !reflect.DeepEqual(decoded(got), decoded(want)) {
		return fmt.Errorf("the render's sent messages are not what the upstream received:\ngot  %s\nwant %s", join(got), join(want))
	}
	return nil
}

// jsonStrings are the strings of the "text" and "content" members in v.
func jsonStrings(v []byte) []string {
	var out []string
	var walk func(r gjson.Result)
	walk = func(r gjson.Result) {
		r.ForEach(func(k, v gjson.Result) bool {
			switch {
			case (k.Str == "text" || k.Str == "content") && v.Type == gjson.String:
				out = append(out, v.Str)
			case v.IsObject() || v.IsArray():
				walk(v)
			}
			return true
		})
	}
	walk(gjson.ParseBytes(v))
	return out
}

// decoded are msgs decoded, to compare as JSON values (a message that
// does not decode as its text).
func decoded(msgs []json.RawMessage) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		var v any
		if err := json.Unmarshal(m, &v); err != nil {
			out[i] = string(m)
			continue
		}
		out[i] = v
	}
	return out
}

func (c *matrixCell) exportImport(t *testing.T) {
	k := "rk-" + c.tenant
	exp := c.h.API(k, "", "GET", convBase+c.conv+"/export", "")
	if exp.Status != 200 {
		t.Fatalf("export: %d %s", exp.Status, exp.Body)
	}
	if a := c.h.API(k, "", "POST", convBase+matrixCopyConv+"/import", string(exp.Body), "application/x-ndjson"); a.Status != 201 {
		t.Fatalf("import: %d %s", a.Status, a.Body)
	}
	orig, cp := c.h.Stored(c.tenant, c.conv), c.h.Stored(c.tenant, matrixCopyConv)
	if len(orig) != len(cp) {
		t.Errorf("the copy holds %d messages, the original %d", len(cp), len(orig))
	}
	for i := range min(len(orig), len(cp)) {
		o, m := orig[i], cp[i]
		if o.Protocol != m.Protocol || o.Hash != m.Hash || o.Role != m.Role || o.Flags != m.Flags || string(o.Raw) != string(m.Raw) {
			t.Errorf("message %d: the copy's is %v %s %q, the original's %v %s %q", i+1, m.Protocol, m.Role, m.Raw, o.Protocol, o.Role, o.Raw)
		}
	}
	var ups []upstreamtest.Received
	for _, conv := range []string{c.conv, matrixCopyConv} {
		_, up := c.send(t, c.in, conv, c.in.c.user("Anything else?"))
		ups = append(ups, up)
	}
	if !reflect.DeepEqual(decoded(ups[0].Messages), decoded(ups[1].Messages)) {
		t.Errorf("the copy's next request sends another context:\ncopy     %s\noriginal %s", join(ups[1].Messages), join(ups[0].Messages))
	}
	for _, p := range []string{"system", "systemInstruction", "instructions"} {
		if o, c := gjson.GetBytes(ups[0].Body, p).Raw, gjson.GetBytes(ups[1].Body, p).Raw; o != c {
			t.Errorf("the copy's next request has %s %s, the original's %s", p, c, o)
		}
	}
	sentHolds(t, "the copy's next request", ups[1], []string{strings.TrimSuffix(plan.SummaryPrefix, "\n"), matrixAnswer4})
}

func (c *matrixCell) forget(t *testing.T) {
	k := "rk-" + c.tenant
	if a := c.h.API(k, "", "POST", convBase+c.conv+"/forget", `{"instruction":"before:turn_2","mode":"hard"}`); a.Status != 200 {
		t.Fatalf("hard forget: %d %s", a.Status, a.Body)
	}
	leaks := func(where string, body []byte) {
		t.Helper()
		if strings.Contains(string(body), matrixSecret) {
			t.Errorf("%s holds %q: %.800s", where, matrixSecret, body)
		}
	}
	get := func(path string) []byte {
		t.Helper()
		a := c.h.API(k, "", "GET", path, "")
		if a.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, a.Status, a.Body)
		}
		return a.Body
	}
	base := convBase + c.conv
	flush(t, c.h)
	leaks("the conversation", get(base))
	leaks("the conversation list", []byte(gjson.GetBytes(get("/recall/v1/conversations?limit=100"), `data.#(id=="`+c.conv+`")`).Raw))
	leaks("its messages", get(base+"/messages?limit=100&include=superseded,forgotten"))
	leaks("its context", get(base+"/context?model=m1"))
	leaks("its export", get(base+"/export"))
	for _, q := range []string{matrixSecret, "locker"} {
		leaks("its search for "+q, []byte(gjson.GetBytes(get(base+"/search?q="+url.QueryEscape(q)), "data").Raw))
		if slices.Contains(hitConversations(get("/recall/v1/search?q="+url.QueryEscape(q))), c.conv) {
			t.Errorf("the tenant's search for %q finds %s", q, c.conv)
		}
	}
	xs := get(base + "/exchanges?limit=200")
	leaks("its exchange records", xs)
	for _, id := range gjson.GetBytes(xs, "data.#.id").Array() {
		leaks("its exchange "+id.Str+" rendered", get(base+"/exchanges/"+id.Str+"?render=messages"))
	}
	for _, m := range c.h.Stored(c.tenant, c.conv) {
		leaks("a stored message", m.Raw)
	}
	if s := c.h.Meta(c.tenant, c.conv).Summary; s != nil {
		leaks("the stored summary", []byte(s.Text))
	}
	leaks("the server's log", []byte(c.h.Logs.String()))
	_, up := c.send(t, c.in, c.conv, c.in.c.user("Last question."))
	leaks("the next upstream request", up.Body)
	// The summary that held the turn is dropped: the turns it covered
	// go whole again, but the first.
	sentHolds(t, "the next upstream request", up, []string{matrixAnswer2, matrixAnswer3, matrixAnswer4, "Last question."}, matrixAnswer1)
	// That turn leaves more unsummarised turns than trigger_turns: the
	// summary made again is made without the forgotten turn.
	if d := c.h.WaitJob(c.conv); d.Outcome != summary.Landed {
		t.Fatalf("the summary job after the forget: %+v, want landed", d)
	}
	calls := c.h.Up.SummaryCalls()
	if len(calls) == 0 {
		t.Fatal("the summary job after the forget landed without a summariser call")
	}
	leaks("the summariser's request", calls[len(calls)-1].Body)
	if s := c.h.Meta(c.tenant, c.conv).Summary; s == nil || !strings.Contains(s.Text, "My name is Ada.") {
		t.Errorf("the summary made again: %+v, want one of the turns left", s)
	} else {
		leaks("the summary made again", []byte(s.Text))
	}
}

// geminiClient is a Gemini client as the Gemini SDKs send and read:
// contents of parts, the tool as a function declaration, a call's
// result as a functionResponse naming it (with its id when the call had
// one; else its place pairs it, and the synthetic id stands for it).
var geminiClient = toolClient{
	name: "gemini",
	body: func(msgs []string, _ bool) string {
		return `{"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"object"}}]}],"contents":[` +
			strings.Join(msgs, ",") + `]}`
	},
	user: func(text string) string { return `{"role":"user","parts":[{"text":` + quoteJSON(text) + `}]}` },
	result: func(id, text string) string {
		idPart := ""
		if id != gemini.SyntheticID("get_weather", 0) {
			idPart = `"id":` + quoteJSON(id) + `,`
		}
		return `{"role":"user","parts":[{"functionResponse":{"name":"get_weather",` + idPart + `"response":{"output":` + quoteJSON(text) + `}}}]}`
	},
	read: func(t *testing.T, body string, stream bool) heard {
		t.Helper()
		chunks := []gjson.Result{gjson.Parse(body)}
		if stream {
			chunks = events(body)
		}
		var h heard
		var parts []string
		names := map[string]int{}
		for _, ch := range chunks {
			cand := ch.Get("candidates.0")
			if f := cand.Get("finishReason").Str; f != "" {
				h.stop = f
			}
			for _, p := range cand.Get("content.parts").Array() {
				parts = append(parts, p.Raw)
				if fc := p.Get("functionCall"); fc.Exists() {
					id := fc.Get("id").Str
					if id == "" {
						id = gemini.SyntheticID(fc.Get("name").Str, names[fc.Get("name").Str])
					}
					names[fc.Get("name").Str]++
					h.calls = append(h.calls, id)
					continue
				}
				h.text += p.Get("text").Str
			}
		}
		if h.stop == "" {
			t.Errorf("gemini answer without a finishReason: %s", body)
		}
		h.resend = []string{`{"role":"model","parts":[` + strings.Join(parts, ",") + `]}`}
		return h
	},
}

// matrixTable collects the cells' outcomes, safe for the parallel cells.
type matrixTable struct {
	mu    sync.Mutex
	rows  []string
	cells map[string]map[string]string
}

func (m *matrixTable) set(row, aspect, outcome string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cells[row] == nil {
		m.cells[row] = map[string]string{}
	}
	m.cells[row][aspect] = outcome
}

// markdown renders the table: a row per cell, a column per aspect.
func (m *matrixTable) markdown() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	b.WriteString("| ingress→upstream | " + strings.Join(matrixAspects, " | ") + " |\n|---|")
	b.WriteString(strings.Repeat("---|", len(matrixAspects)) + "\n")
	for _, r := range m.rows {
		b.WriteString("| " + r + " |")
		for _, a := range matrixAspects {
			o := m.cells[r][a]
			if o == "" {
				o = "not run"
			}
			b.WriteString(" " + o + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
