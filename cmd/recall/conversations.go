package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/recallproxy/recall/api"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/thread"
	"github.com/recallproxy/recall/wire"
)

// conversationsUsage is the help of "recall conversations".
const conversationsUsage = `usage: recall conversations <verb> [flags] [arguments]

Read and change what a running Recall stores, through its conversation API
(/recall/v1/). Tables by default; --json prints the API's answer as is.

verbs:
  list                          conversations, newest activity first
  show ID                       one conversation with its capacity
  messages ID [--thread NAME]   its stored messages (a subagent's thread's with --thread)
  context ID                    what the next chat request would send upstream
  search [--conversation ID] QUERY
                                messages matching QUERY, best first
  export ID                     JSON Lines of every message (to stdout, or --output FILE)
  import ID [FILE]              an export into an empty conversation (FILE or stdin)
  forget ID INSTRUCTION         oldest | before:turn_N | speaker:ROLE | position:N (--hard erases)
  exchanges ID [XID]            its upstream calls, newest first, each with its thread and why;
                                with XID one of them and what it sent
  threads ID                    its threads: the main thread, each subagent's, the side calls
  delete ID                     erase every trace of it

"recall conversations <verb> --help" lists a verb's flags.

exit codes: 0 done, 1 the server refused or failed (its message is printed),
2 the command line is wrong.
`

// apiClient calls a running Recall's conversation API.
type apiClient struct {
	addr, key, tenant string
	http              *http.Client
}

// httpClient is the client the verbs use: never through a proxy from the
// environment when the address is loopback (http.ProxyFromEnvironment
// already skips those).
func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
}

// apiError is an error answer of the API.
type apiError struct {
	status  int
	message string
	code    string
}

func (e *apiError) Error() string {
	s := e.message
	if e.code != "" {
		s += " (" + strconv.Itoa(e.status) + " " + e.code + ")"
	} else {
		s += " (" + strconv.Itoa(e.status) + ")"
	}
	return s
}

// do calls method path with body and returns the answer's body, or an
// *apiError for a status other than 2xx.
func (c *apiClient) do(method, path string, body io.Reader, contentType string) ([]byte, error) {
	req, err := http.NewRequest(method, c.addr+path, body)
	if err != nil {
		return nil, err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.tenant != "" {
		req.Header.Set("X-Recall-Tenant", c.tenant)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Recall at %s: %w", c.addr, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
				Code    string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(b))
		}
		return nil, &apiError{status: resp.StatusCode, message: e.Error.Message, code: e.Error.Code}
	}
	return b, nil
}

// verb is one "recall conversations" verb.
type verb struct {
	name, args, about string
	nargs             int // positional arguments: exactly, or at least with minArgs
	optional          int // further optional positional arguments
	flags             func(fs *flag.FlagSet) func(c *apiClient, args []string, out io.Writer, asJSON bool) error
}

func conversations(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		w := stderr
		code := exitUsage
		if len(args) > 0 {
			w, code = stdout, exitOK
		}
		fmt.Fprint(w, conversationsUsage)
		return code
	}
	var v *verb
	for i := range verbs {
		if verbs[i].name == args[0] {
			v = &verbs[i]
		}
	}
	if v == nil {
		fmt.Fprintf(stderr, "recall conversations: unknown verb %q\n\n%s", args[0], conversationsUsage)
		return exitUsage
	}
	cmd := command{name: "conversations " + v.name, synopsis: v.args, about: v.about, env: []envVar{
		{"RECALL_API_KEY", "(none)", "the key, as --key"},
		{"RECALL_ADDR", defaultAddr, "Recall's base URL, as --addr"},
	}}
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	addr := fs.String("addr", envOr("RECALL_ADDR", defaultAddr), "Recall's base `URL`")
	key := fs.String("key", "", "the API `key` (default $RECALL_API_KEY): a tenant's key, or the admin key with --tenant")
	tenant := fs.String("tenant", "", "with the admin key: the tenant `ID` to act on")
	asJSON := fs.Bool("json", false, "print the API's JSON answer instead of a table")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for an answer")
	runVerb := v.flags(fs)
	pos, code, done := parseInterleaved(cmd, fs, args[1:], stdout, stderr)
	if done {
		return code
	}
	if len(pos) < v.nargs || len(pos) > v.nargs+v.optional {
		fmt.Fprintf(stderr, "recall %s: want %s (see recall %s --help)\n", cmd.name, strings.TrimSpace(v.args), cmd.name)
		return exitUsage
	}
	u, err := url.Parse(*addr)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "recall %s: --addr must be an http:// or https:// URL\n", cmd.name)
		return exitUsage
	}
	if *key == "" {
		*key = os.Getenv("RECALL_API_KEY")
	}
	if *key == "" {
		fmt.Fprintf(stderr, "recall %s: no key: pass --key or set RECALL_API_KEY\n", cmd.name)
		return exitUsage
	}
	hc := httpClient()
	hc.Timeout = *timeout
	c := &apiClient{addr: strings.TrimRight(u.String(), "/"), key: *key, tenant: *tenant, http: hc}
	if err := runVerb(c, pos, stdout, *asJSON); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "recall %s: %v\n", cmd.name, err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "recall %s: %v\n", cmd.name, err)
		return exitFail
	}
	return exitOK
}

// usageError is a command line the verb refuses.
type usageError string

func (e usageError) Error() string { return string(e) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parseInterleaved parses flags wherever they are among the positional
// arguments ("show ID --json" as well as "show --json ID").
func parseInterleaved(cmd command, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, int, bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			cmd.printHelp(stdout, fs)
			return nil, exitOK, true
		case err != nil:
			fmt.Fprintf(stderr, "recall %s: %v (see recall %s --help)\n", cmd.name, err, cmd.name)
			return nil, exitUsage, true
		}
		if fs.NArg() == 0 {
			return pos, exitOK, false
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

var verbs = []verb{
	{name: "list", args: "[--limit N] [--after ID] [--status STATUS]", about: "List conversations, newest activity first.",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			limit := fs.Int("limit", 20, "page size, 1-100")
			after := fs.String("after", "", "the last `ID` of the previous page")
			status := fs.String("status", "", "only active, awaiting_tool_results, idle or ended conversations")
			return func(c *apiClient, _ []string, out io.Writer, asJSON bool) error {
				q := url.Values{"limit": {strconv.Itoa(*limit)}}
				if *after != "" {
					q.Set("after", *after)
				}
				if *status != "" {
					q.Set("status", *status)
				}
				var l api.List[api.Conversation, string]
				if done, err := c.call(out, asJSON, "GET", "/recall/v1/conversations?"+q.Encode(), nil, "", &l); done {
					return err
				}
				tw := table(out, "ID", "STATUS", "TURNS", "MESSAGES", "TOKENS", "UPDATED", "TITLE")
				for _, cv := range l.Data {
					title := cv.Title
					if title == "" {
						title = "-"
					}
					row(tw, cv.ID, cv.Status, cv.Turns, cv.Messages, cv.Tokens, when(cv.UpdatedAt), title)
				}
				tw.Flush()
				if l.HasMore {
					fmt.Fprintf(out, "more: --after %s\n", *l.LastID)
				}
				return nil
			}
		}},
	{name: "show", args: "ID", nargs: 1, about: "Show one conversation with its capacity.",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				var d api.Detail
				if done, err := c.call(out, asJSON, "GET", convPath(args[0], ""), nil, "", &d); done {
					return err
				}
				printDetail(out, &d)
				return nil
			}
		}},
	{name: "messages", args: "ID [--thread NAME] [--limit N] [--after SEQ] [--order asc|desc] [--include superseded,forgotten]", nargs: 1,
		about: "List a conversation's stored messages, or those of one of its subagents' threads.",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			limit := fs.Int("limit", 100, "page size, 1-1000")
			after := fs.Uint64("after", 0, "the last `SEQ` of the previous page")
			order := fs.String("order", "asc", "asc or desc")
			include := fs.String("include", "", "inactive messages to list too: superseded, forgotten")
			threadName := fs.String("thread", "", "the subagent's thread `NAME` (see threads ID); main: the conversation's own")
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				id, err := threadID(args[0], *threadName)
				if err != nil {
					return err
				}
				q := url.Values{"limit": {strconv.Itoa(*limit)}, "order": {*order}}
				if *after > 0 {
					q.Set("after", strconv.FormatUint(*after, 10))
				}
				if *include != "" {
					q.Set("include", *include)
				}
				var l api.List[api.Message, uint64]
				if done, err := c.call(out, asJSON, "GET", convPath(id, "messages")+"?"+q.Encode(), nil, "", &l); done {
					return err
				}
				tw := table(out, "SEQ", "TURN", "ROLE", "TOKENS", "FLAGS", "CONTENT")
				for _, m := range l.Data {
					row(tw, m.Seq, m.Turn, m.Role, m.Tokens, strings.Join(m.Flags, ","), content(m.Role, m.Text))
				}
				tw.Flush()
				if l.HasMore {
					fmt.Fprintf(out, "more: --after %d\n", *l.LastID)
				}
				return nil
			}
		}},
	{name: "context", args: "ID [--model MODEL] [--budget TOKENS]", nargs: 1,
		about: "Show what the next chat request on the conversation would send upstream.",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			model := fs.String("model", "", "the model of the next request")
			budget := fs.Int("budget", 0, "a history budget in tokens, instead of the tenant's")
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				q := url.Values{}
				if *model != "" {
					q.Set("model", *model)
				}
				if *budget > 0 {
					q.Set("budget", strconv.Itoa(*budget))
				}
				var x api.Context
				if done, err := c.call(out, asJSON, "GET", convPath(args[0], "context")+"?"+q.Encode(), nil, "", &x); done {
					return err
				}
				if x.Summary != nil {
					fmt.Fprintf(out, "summary (through seq %d, %d tokens): %s\n\n", x.Summary.Through, x.Summary.Tokens, oneLine(x.Summary.Text, 100))
				}
				tw := table(out, "SEQ", "ROLE", "TOKENS", "CONTENT")
				for _, m := range x.Messages {
					row(tw, m.Seq, m.Role, m.Tokens, content(m.Role, m.Text))
				}
				tw.Flush()
				fmt.Fprintf(out, "\n%d tokens of a %d budget, %d of %d turns", x.Tokens, x.Budget, x.IncludedTurns, x.StoredTurns)
				if x.Model != "" {
					fmt.Fprintf(out, ", for %s", x.Model)
				}
				fmt.Fprintln(out)
				for _, d := range x.Dropped {
					fmt.Fprintf(out, "dropped: turn %d seq %d (%d tokens): %s\n", d.Turn, d.Seq, d.Tokens, d.Reason)
				}
				return nil
			}
		}},
	{name: "search", args: "[--conversation ID] [--limit N] QUERY...", nargs: 1, optional: 100,
		about: "Search the stored messages, best match first (BM25, ties newest first).",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			conv := fs.String("conversation", "", "search this conversation `ID` only")
			limit := fs.Int("limit", 20, "most hits, 1-100")
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				q := url.Values{"q": {strings.Join(args, " ")}, "limit": {strconv.Itoa(*limit)}}
				path := "/recall/v1/search?"
				if *conv != "" {
					path = convPath(*conv, "search") + "?"
				}
				var r api.SearchResult
				if done, err := c.call(out, asJSON, "GET", path+q.Encode(), nil, "", &r); done {
					return err
				}
				tw := table(out, "CONVERSATION", "SEQ", "SCORE", "ROLE", "CONTENT")
				for _, h := range r.Data {
					row(tw, h.Conversation, h.Seq, strconv.FormatFloat(h.Score, 'f', 2, 64), h.Role, content(h.Role, h.Text))
				}
				return tw.Flush()
			}
		}},
	{name: "export", args: "ID [--output FILE]", nargs: 1,
		about: "Write the conversation as JSON Lines (a header, then one message a line), for backup or migration.",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			output := fs.String("output", "", "write to `FILE` instead of stdout")
			return func(c *apiClient, args []string, out io.Writer, _ bool) error {
				b, err := c.do("GET", convPath(args[0], "export"), nil, "")
				if err != nil {
					return err
				}
				if *output != "" {
					return os.WriteFile(*output, b, 0o600)
				}
				_, err = out.Write(b)
				return err
			}
		}},
	{name: "import", args: "ID [FILE]", nargs: 1, optional: 1,
		about: "Import an export (FILE, or stdin) into an empty conversation.",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				var body []byte
				var err error
				if len(args) > 1 && args[1] != "-" {
					body, err = os.ReadFile(args[1])
				} else {
					body, err = io.ReadAll(os.Stdin)
				}
				if err != nil {
					return err
				}
				var d api.Detail
				if done, err := c.call(out, asJSON, "POST", convPath(args[0], "import"), bytes.NewReader(body), "application/x-ndjson", &d); done {
					return err
				}
				fmt.Fprintf(out, "imported %s: %d messages, %d turns, %d tokens\n", d.ID, d.Messages, d.Turns, d.Tokens)
				return nil
			}
		}},
	{name: "forget", args: "ID INSTRUCTION [--hard]", nargs: 2,
		about: "Forget messages: oldest, before:turn_N, speaker:user|assistant|tool or position:N. A tool call\n" +
			"and its results go together. Soft by default (kept, flagged, never sent); --hard erases them.",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			hard := fs.Bool("hard", false, "erase the messages instead of flagging them")
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				mode := "soft"
				if *hard {
					mode = "hard"
				}
				req, _ := json.Marshal(api.ForgetRequest{Instruction: args[1], Mode: mode})
				var f api.Forgotten
				if done, err := c.call(out, asJSON, "POST", convPath(args[0], "forget"), bytes.NewReader(req), "application/json", &f); done {
					return err
				}
				seqs := make([]string, len(f.Forgotten))
				for i, s := range f.Forgotten {
					seqs[i] = strconv.FormatInt(s, 10)
				}
				if len(seqs) == 0 {
					fmt.Fprintf(out, "nothing to forget in %s\n", args[0])
				} else {
					fmt.Fprintf(out, "forgot (%s) seq %s\n", f.Mode, strings.Join(seqs, ", "))
				}
				fmt.Fprintf(out, "%s now: %d messages, %d turns, %d tokens\n", args[0], f.Conversation.Messages, f.Conversation.Turns, f.Conversation.Tokens)
				return nil
			}
		}},
	{name: "exchanges", args: "ID [XID] [--thread NAME] [--limit N] [--after XID]", nargs: 1, optional: 1,
		about: "List the conversation's exchange records (its last 200 upstream calls), newest first: what each\n" +
			"sent, dropped (and why) and cut, its thread and why it is in it. With XID, one record and the\n" +
			"messages it sent, from the store. A subagent's thread keeps its own (--thread).",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			limit := fs.Int("limit", 20, "page size, 1-200")
			after := fs.String("after", "", "the last `XID` of the previous page")
			threadName := fs.String("thread", "", "the subagent's thread `NAME` (see threads ID); main: the conversation's own")
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				id, err := threadID(args[0], *threadName)
				if err != nil {
					return err
				}
				if len(args) > 1 {
					var x api.Exchange
					if done, err := c.call(out, asJSON, "GET", convPath(id, "exchanges/"+url.PathEscape(args[1]))+"?render=messages", nil, "", &x); done {
						return err
					}
					printExchange(out, &x)
					return nil
				}
				q := url.Values{"limit": {strconv.Itoa(*limit)}}
				if *after != "" {
					q.Set("after", *after)
				}
				var l api.List[api.Exchange, string]
				if done, err := c.call(out, asJSON, "GET", convPath(id, "exchanges")+"?"+q.Encode(), nil, "", &l); done {
					return err
				}
				tw := table(out, "XID", "CREATED", "KIND", "THREAD", "WHY", "STATUS", "MODEL", "TOKENS", "REPORTED", "INCLUDED", "DROPPED")
				for _, x := range l.Data {
					th, why := exchangeThread(&x.ExchangeRecord)
					row(tw, x.ID, when(x.CreatedAt), x.Kind, th, why, x.Status, x.Model, x.Tokens.EstimatedInput, x.Tokens.ReportedInput,
						spanList(x.Included), len(x.Dropped))
				}
				tw.Flush()
				if l.HasMore {
					fmt.Fprintf(out, "more: --after %s\n", *l.LastID)
				}
				return nil
			}
		}},
	{name: "threads", args: "ID", nargs: 1,
		about: "List the conversation's threads: the main thread (the conversation), each subagent's thread (a\n" +
			"conversation of its own, ID~NAME: its messages with messages ID --thread NAME), and how many of\n" +
			"its last 200 exchanges were side calls (sent as the agent sent them, never stored as turns).",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				var l api.List[api.Conversation, string]
				if done, err := c.call(out, asJSON, "GET", convPath(args[0], "threads"), nil, "", &l); done {
					return err
				}
				var main api.Detail
				switch b, err := c.do("GET", convPath(args[0], ""), nil, ""); {
				case err == nil:
					if err := json.Unmarshal(b, &main); err != nil {
						return err
					}
				case !notFound(err): // a subagent's thread may be stored before its main thread
					return err
				}
				tw := table(out, "THREAD", "KIND", "ID", "TURNS", "MESSAGES", "TOKENS", "UPDATED")
				row(tw, thread.Main, "main", args[0], main.Turns, main.Messages, main.Tokens, when(main.UpdatedAt))
				for _, t := range l.Data {
					row(tw, t.Thread, "subagent", t.ID, t.Turns, t.Messages, t.Tokens, when(t.UpdatedAt))
				}
				tw.Flush()
				b, err := c.do("GET", convPath(args[0], "exchanges")+"?limit=200", nil, "")
				if notFound(err) {
					return nil // no exchange recorded: no side call to count
				}
				if err != nil {
					return err
				}
				var x api.List[api.Exchange, string]
				if err := json.Unmarshal(b, &x); err != nil {
					return err
				}
				side := 0
				for _, r := range x.Data {
					if r.Kind == thread.Side {
						side++
					}
				}
				more := ""
				if x.HasMore {
					more = " (of its last 200)"
				}
				fmt.Fprintf(out, "side calls: %d recorded%s\n", side, more)
				return nil
			}
		}},
	{name: "delete", args: "ID", nargs: 1, about: "Erase the conversation: its messages, summary, search and listing entries.",
		flags: func(fs *flag.FlagSet) func(*apiClient, []string, io.Writer, bool) error {
			return func(c *apiClient, args []string, out io.Writer, asJSON bool) error {
				b, err := c.do("DELETE", convPath(args[0], ""), nil, "")
				if err != nil || asJSON {
					return printRaw(out, b, err)
				}
				fmt.Fprintf(out, "deleted %s\n", args[0])
				return nil
			}
		}},
}

// threadID is the id of conversation id's thread name (history.ThreadID):
// the conversation's own for "" and main. Side calls have no thread of
// their own, and a name must be a thread's.
func threadID(id, name string) (string, error) {
	switch {
	case name == "" || name == thread.Main:
		return id, nil
	case name == thread.Side:
		return "", usageError("--thread side: side calls are stored in no thread; they are the exchanges of kind side")
	case !history.ValidThreadName(name):
		return "", usageError("--thread: a thread's name is 1-64 characters of [A-Za-z0-9._:@-] (see threads ID)")
	}
	return history.ThreadID(id, name), nil
}

// exchangeThread is the thread an exchange record is in and why, for a
// table: main for the main thread's turns, "-" for a summariser's call.
func exchangeThread(x *history.ExchangeRecord) (name, why string) {
	name, why = x.Thread, x.ThreadReason
	if name == "" {
		name = thread.Main
	}
	if x.Kind == "summary" {
		name = "-"
	}
	if why == "" {
		why = "-"
	}
	return name, why
}

// notFound reports whether err is the API's 404.
func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusNotFound
}

func convPath(id, verb string) string {
	p := "/recall/v1/conversations/" + url.PathEscape(id)
	if verb != "" {
		p += "/" + verb
	}
	return p
}

// call calls method path with body (see do) and decodes the answer into
// v, or, asJSON, prints the answer instead (see printRaw). done reports
// that the command has nothing left to do but return err: the answer
// was printed, or the call or the decoding failed.
func (c *apiClient) call(out io.Writer, asJSON bool, method, path string, body io.Reader, contentType string, v any) (done bool, err error) {
	b, err := c.do(method, path, body, contentType)
	if err != nil || asJSON {
		return true, printRaw(out, b, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return true, err
	}
	return false, nil
}

// printRaw prints an answer's JSON (with a final newline), or returns err.
func printRaw(out io.Writer, b []byte, err error) error {
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		buf.Reset()
		buf.Write(b)
	}
	buf.WriteByte('\n')
	_, err = out.Write(buf.Bytes())
	return err
}

func table(out io.Writer, head ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	return tw
}

func row(tw *tabwriter.Writer, cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(tw, strings.Join(s, "\t"))
}

// when formats Unix seconds for a table, in UTC.
func when(unix int64) string {
	if unix == 0 {
		return "-"
	}
	return time.Unix(unix, 0).UTC().Format("2006-01-02 15:04:05")
}

func printDetail(out io.Writer, d *api.Detail) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	title := d.Title
	if title == "" {
		title = "-"
	}
	for _, kv := range [][2]any{
		{"id", d.ID}, {"title", title}, {"status", d.Status}, {"created", when(d.CreatedAt)}, {"updated", when(d.UpdatedAt)},
		{"turns", d.Turns}, {"messages", d.Messages}, {"tokens", d.Tokens},
		{"budget", fmt.Sprintf("%d tokens (%d%% used)", d.Capacity.BudgetTokens, percent(d.Capacity.TokensStored, d.Capacity.BudgetTokens))},
		{"summarized", fmt.Sprintf("%d turns in %d tokens", d.Capacity.TurnsSummarized, d.Capacity.SummaryTokens)},
		{"usage", fmt.Sprintf("%d prompt + %d completion tokens", d.Usage.PromptTokens, d.Usage.CompletionTokens)},
		{"episode", fmt.Sprintf("%d (%d sealed)", d.Episode, len(d.Episodes))},
	} {
		fmt.Fprintf(tw, "%s:\t%v\n", kv[0], kv[1])
	}
	tw.Flush()
	if d.Summary != "" {
		fmt.Fprintf(out, "\nsummary:\n%s\n", d.Summary)
	}
}

// printExchange prints one exchange record and the messages it sent.
func printExchange(out io.Writer, x *api.Exchange) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	summary := "-"
	if x.Summary != nil {
		summary = fmt.Sprintf("through seq %d, %d tokens", x.Summary.Through, x.Summary.Tokens)
	}
	t := x.Tokens
	for _, kv := range [][2]any{
		{"id", x.ID}, {"created", when(x.CreatedAt)}, {"kind", x.Kind}, {"thread", threadLine(&x.ExchangeRecord)},
		{"protocols", x.Ingress + " -> " + x.Upstream}, {"model", x.Model}, {"stream", x.Stream},
		{"status", fmt.Sprintf("%s (%d)", x.Status, x.HTTPStatus)},
		{"latency", fmt.Sprintf("%d ms total, %d upstream (first byte %d), %d Recall", x.LatencyMS.Total, x.LatencyMS.Upstream, x.LatencyMS.FirstByte, x.LatencyMS.Recall)},
		{"tokens", fmt.Sprintf("%d estimated of a %d budget: %d instructions, %d tools, %d summary, %d history, %d new", t.EstimatedInput, x.Budget, t.Instructions, t.Tools, t.Summary, t.History, t.New)},
		{"reported", fmt.Sprintf("%d input (%d cached), %d output", t.ReportedInput, t.Cached, t.Output)},
		{"summary", summary}, {"included", spanList(x.Included)}, {"committed", spanList(x.Committed)},
		{"repaired", x.RepairedCalls},
	} {
		fmt.Fprintf(tw, "%s:\t%v\n", kv[0], kv[1])
	}
	tw.Flush()
	for _, d := range x.Dropped {
		turns := ""
		if d.Turns > 0 {
			turns = fmt.Sprintf(" (%d turns)", d.Turns)
		}
		fmt.Fprintf(out, "dropped: seq %d-%d%s: %s\n", d.From, d.To, turns, d.Reason)
	}
	for _, c := range x.Cut {
		fmt.Fprintf(out, "cut: seq %d from %d to %d characters\n", c.Seq, c.CharsBefore, c.CharsAfter)
	}
	if len(x.Messages) == 0 {
		return
	}
	fmt.Fprintln(out)
	tw = table(out, "SEQ", "KIND", "ROLE", "CONTENT")
	for _, m := range x.Messages {
		seq, role, text := "-", "-", "-"
		if m.Seq != nil {
			seq = strconv.FormatUint(*m.Seq, 10)
		}
		if m.Role != nil {
			role = *m.Role
		}
		switch {
		case m.Forgotten:
			text = "(forgotten)"
		case m.Kind == "instruction":
			text = fmt.Sprintf("(not stored: %d tokens)", m.Tokens)
		case len(m.Content) == 0 || string(m.Content) == "null":
			text = "(not stored)"
		default:
			text = content(role, m.Text)
		}
		row(tw, seq, m.Kind, role, text)
	}
	tw.Flush()
}

// threadLine is an exchange's thread and why, for printExchange.
func threadLine(x *history.ExchangeRecord) string {
	name, why := exchangeThread(x)
	if why == "-" {
		return name
	}
	return name + " (" + why + ")"
}

// spanList prints ranges of seqs ("1-4, 7"), "-" for none.
func spanList(spans []history.Span) string {
	if len(spans) == 0 {
		return "-"
	}
	parts := make([]string, len(spans))
	for i, s := range spans {
		parts[i] = strconv.FormatUint(s.From, 10)
		if s.To != s.From {
			parts[i] += "-" + strconv.FormatUint(s.To, 10)
		}
	}
	return strings.Join(parts, ", ")
}

func percent(n, of int) int {
	if of <= 0 {
		return 0
	}
	return n * 100 / of
}

// content is a one-line view of a message for a table, from the text and
// the canonical role its protocol's codec read (the API's view): a tool
// result is marked "← ", an agent's <system-reminder> blocks are left out
// (the user's own words are what a table shows), and a message with no
// words (reasoning, thinking, an image) reads "-".
func content(role, text string) string {
	text = strings.TrimSpace(systemReminders.ReplaceAllString(text, ""))
	if text == "" {
		return "-"
	}
	if role == wire.RoleTool {
		text = "← " + text
	}
	return oneLine(text, 60)
}

// systemReminders are the <system-reminder> blocks agents put in user
// messages.
var systemReminders = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)

// oneLine collapses s's whitespace and cuts it to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
