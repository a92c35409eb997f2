package main

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The CLI's tables read every protocol's messages through the API's role
// and text (what each protocol's codec reads): Responses items, Anthropic
// blocks and Gemini parts show their words, calls and results, thinking
// and reasoning show nothing, and an agent's <system-reminder> blocks are
// left out.
func TestContentReadsEveryProtocol(t *testing.T) {
	for _, k := range cliEnv {
		t.Setenv(k, "")
	}
	addr, _ := cliServer(t)
	lines := []string{
		`{"object":"conversation.export","version":1,"id":"mixed"}`,
		`{"object":"conversation.message","protocol":"chat.completions","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>\nAs you answer, use the context.\n</system-reminder>"},{"type":"text","text":"fix the test"}]}}`,
		`{"object":"conversation.message","protocol":"responses","message":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}}`,
		`{"object":"conversation.message","protocol":"responses","message":{"type":"function_call","call_id":"call_2","name":"weather","arguments":"{}"}}`,
		`{"object":"conversation.message","protocol":"responses","message":{"type":"function_call_output","call_id":"call_2","output":"sunny"}}`,
		`{"object":"conversation.message","protocol":"responses","message":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"It is 42.","annotations":[]}]}}`,
		`{"object":"conversation.message","protocol":"messages","message":{"role":"user","content":"and the file?"}}`,
		`{"object":"conversation.message","protocol":"messages","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]}}`,
		`{"object":"conversation.message","protocol":"messages","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"the secret is 42"}]}}`,
		`{"object":"conversation.message","protocol":"gemini","message":{"role":"user","parts":[{"text":"and in Oslo?"}]}}`,
		`{"object":"conversation.message","protocol":"gemini","message":{"role":"model","parts":[{"text":"plan","thought":true},{"functionCall":{"name":"weather","args":{}},"thoughtSignature":"c2ln"}]}}`,
		`{"object":"conversation.message","protocol":"gemini","message":{"role":"user","parts":[{"functionResponse":{"name":"weather","response":{"output":"rain"}}}]}}`,
		`{"object":"conversation.message","protocol":"gemini","message":{"role":"model","parts":[{"text":"Rain in Oslo."}]}}`,
	}
	for i := 1; i < len(lines); i++ {
		lines[i] = strings.Replace(lines[i], `{`, `{"seq":`+strconv.Itoa(i)+`,"turn":1,"episode":1,"created_at":1772355660,"tokens":0,"flags":[],`, 1)
	}
	file := filepath.Join(t.TempDir(), "mixed.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conn := []string{"--addr", addr, "--key", "sk-cli"}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"conversations", "import", "mixed", file}, conn...), &stdout, &stderr); code != exitOK {
		t.Fatalf("import: exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := run(append([]string{"conversations", "messages", "mixed"}, conn...), &stdout, &stderr); code != exitOK {
		t.Fatalf("messages: exit %d: %s", code, stderr.String())
	}
	want := [][2]string{ // role, content of each row in order
		{"user", "fix the test"},
		{"assistant", "-"},
		{"assistant", "weather {}"},
		{"tool", "← sunny"},
		{"assistant", "It is 42."},
		{"user", "and the file?"},
		{"assistant", "Reading. Read {}"},
		{"tool", "← the secret is 42"},
		{"user", "and in Oslo?"},
		{"assistant", "weather {}"},
		{"tool", "← rain"},
		{"assistant", "Rain in Oslo."},
	}
	rows := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")[1:]
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d:\n%s", len(rows), len(want), stdout.String())
	}
	for i, r := range rows {
		f := strings.Fields(r)
		if got := f[2]; got != want[i][0] {
			t.Errorf("row %d role: got %q, want %q", i+1, got, want[i][0])
		}
		if got := strings.Join(f[5:], " "); got != want[i][1] && strings.Join(f[4:], " ") != want[i][1] {
			t.Errorf("row %d content: got %q, want %q", i+1, r, want[i][1])
		}
	}
}

// The tables show the role and text the API answers, never a reading of
// the message's JSON: a message whose JSON a reader of the chat shape
// would read otherwise (a "model" role, words in no field it knows) reads
// as the API says.
func TestTablesReadTheAPIsRoleAndText(t *testing.T) {
	for _, k := range cliEnv {
		t.Setenv(k, "")
	}
	const view = `{"seq":1,"turn":1,"episode":1,"created_at":1772355660,"tokens":7,"flags":[],` +
		`"protocol":"gemini","role":"assistant","text":"the codec's words",` +
		`"message":{"role":"model","content":"the JSON's words","parts":[{"text":"the parts' words"}]}}`
	answers := map[string]string{
		"/recall/v1/conversations/c/messages": `{"object":"list","data":[{"object":"conversation.message",` + view[1:] + `],"first_id":1,"last_id":1,"has_more":false}`,
		"/recall/v1/conversations/c/context":  `{"object":"conversation.context","messages":[` + view + `],"tokens":7,"budget":100,"stored_turns":1,"included_turns":1,"dropped":[]}`,
		"/recall/v1/search":                   `{"object":"list","data":[{"conversation":"c","score":1,"object":"conversation.message",` + view[1:] + `]}`,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(b))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	conn := []string{"--addr", "http://" + ln.Addr().String(), "--key", "sk-cli"}
	for _, args := range [][]string{{"messages", "c"}, {"context", "c"}, {"search", "words"}} {
		t.Run(args[0], func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(append(append([]string{"conversations"}, args...), conn...), &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out := stdout.String()
			if !strings.Contains(out, "the codec's words") || !strings.Contains(out, " assistant ") {
				t.Errorf("got %q, want the API's role and text", out)
			}
			if strings.Contains(out, "JSON's") || strings.Contains(out, "parts'") || strings.Contains(out, "model") {
				t.Errorf("got %q, which read the message's JSON", out)
			}
		})
	}
}
