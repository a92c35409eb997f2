package e2e

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/internal/e2etest"
)

// Every Response object Recall renders carries every field the Open
// Responses schema requires, with a value of an allowed type: the
// non-streamed answer of POST /v1/responses, the response of each stream
// event that has one (response.created, response.in_progress,
// response.completed) and GET /v1/responses/{id}, over a Responses
// upstream (the upstream's values) and bridged over chat completions and
// Messages (Recall's values: the request's settings, defaults
// otherwise).

// responseRequired are the members the Open Responses schema requires of
// a Response object (openresponses, schema/components/schemas/
// ResponseResource.json, whose "required" list this is, in its order),
// each with the types its property schema allows: "a|b" is either,
// "any" is any value (metadata has no type).
var responseRequired = []struct{ key, types string }{
	{"id", "string"},
	{"object", "string"},
	{"created_at", "integer"},
	{"completed_at", "integer|null"},
	{"status", "string"},
	{"incomplete_details", "object|null"},
	{"model", "string"},
	{"previous_response_id", "string|null"},
	{"instructions", "string|array|null"},
	{"output", "array"},
	{"error", "object|null"},
	{"tools", "array"},
	{"tool_choice", "string|object"},
	{"truncation", "string"},
	{"parallel_tool_calls", "boolean"},
	{"text", "object"},
	{"top_p", "number"},
	{"presence_penalty", "number"},
	{"frequency_penalty", "number"},
	{"top_logprobs", "integer"},
	{"temperature", "number"},
	{"reasoning", "object|null"},
	{"user", "string|null"},
	{"usage", "object|null"},
	{"max_output_tokens", "integer|null"},
	{"max_tool_calls", "integer|null"},
	{"store", "boolean"},
	{"background", "boolean"},
	{"service_tier", "string"},
	{"metadata", "any"},
	{"safety_identifier", "string|null"},
	{"prompt_cache_key", "string|null"},
}

// nestedRequired are the members the schema requires of the Response's
// objects, by path from the Response ("#" an array's every element; an
// absent or null parent is not checked): Usage.json, its
// InputTokensDetails.json and OutputTokensDetails.json, TextField.json,
// Reasoning.json, IncompleteDetails.json, and FunctionTool.json for the
// function tools the Response echoes.
var nestedRequired = []struct{ parent, key, types string }{
	{"usage", "input_tokens", "integer"},
	{"usage", "output_tokens", "integer"},
	{"usage", "total_tokens", "integer"},
	{"usage", "input_tokens_details", "object"},
	{"usage", "output_tokens_details", "object"},
	{"usage.input_tokens_details", "cached_tokens", "integer"},
	{"usage.output_tokens_details", "reasoning_tokens", "integer"},
	{"text", "format", "object"},
	{"text.format", "type", "string"},
	{"reasoning", "effort", "string|null"},
	{"reasoning", "summary", "string|null"},
	{"incomplete_details", "reason", "string"},
	{"error", "code", "string"},
	{"error", "message", "string"},
	{"tools.#(type==function)#", "type", "string"},
	{"tools.#(type==function)#", "name", "string"},
	{"tools.#(type==function)#", "description", "string|null"},
	{"tools.#(type==function)#", "parameters", "object|null"},
	{"tools.#(type==function)#", "strict", "boolean|null"},
}

// isType reports whether v is of one of types.
func isType(v gjson.Result, types string) bool {
	for _, t := range strings.Split(types, "|") {
		var ok bool
		switch t {
		case "any":
			ok = true
		case "null":
			ok = v.Type == gjson.Null
		case "string":
			ok = v.Type == gjson.String
		case "number":
			ok = v.Type == gjson.Number
		case "integer":
			ok = v.Type == gjson.Number && !strings.ContainsAny(v.Raw, ".eE")
		case "boolean":
			ok = v.IsBool()
		case "object":
			ok = v.IsObject()
		case "array":
			ok = v.IsArray()
		}
		if ok {
			return true
		}
	}
	return false
}

// checkRequired reports each required member r lacks, or has with a type
// the schema does not allow, and a completed_at that does not match the
// status (the completion time when completed, null otherwise).
// checkMembers is checkRequired, and each member of want (a gjson path)
// holding the JSON want gives it.
func checkMembers(t *testing.T, where string, r gjson.Result, want map[string]string) {
	t.Helper()
	checkRequired(t, where, r)
	for path, w := range want {
		if got := r.Get(path); !sameJSON(got, w) {
			t.Errorf("%s: %s: got %s, want %s", where, path, got.Raw, w)
		}
	}
}

func checkRequired(t *testing.T, where string, r gjson.Result) {
	t.Helper()
	if !r.IsObject() {
		t.Errorf("%s: got %.200s, want a Response object", where, r.Raw)
		return
	}
	for _, f := range responseRequired {
		if v := r.Get(f.key); !v.Exists() {
			t.Errorf("%s: %s missing, want %s", where, f.key, f.types)
		} else if !isType(v, f.types) {
			t.Errorf("%s: %s: got %s, want %s", where, f.key, v.Raw, f.types)
		}
	}
	for _, f := range nestedRequired {
		parents := []gjson.Result{r.Get(f.parent)}
		if strings.HasSuffix(f.parent, "#") {
			parents = parents[0].Array()
		}
		for _, p := range parents {
			if !p.IsObject() {
				continue
			}
			if v := p.Get(f.key); !v.Exists() {
				t.Errorf("%s: %s.%s missing, want %s (in %s)", where, f.parent, f.key, f.types, p.Raw)
			} else if !isType(v, f.types) {
				t.Errorf("%s: %s.%s: got %s, want %s", where, f.parent, f.key, v.Raw, f.types)
			}
		}
	}
	completed := r.Get("completed_at")
	if r.Get("status").Str == "completed" {
		if completed.Type != gjson.Number || completed.Int() < r.Get("created_at").Int() {
			t.Errorf("%s: completed_at of a completed response: got %s, want a time from created_at %d on", where, completed.Raw, r.Get("created_at").Int())
		}
	} else if completed.Type != gjson.Null {
		t.Errorf("%s: completed_at of a response %s: got %s, want null", where, r.Get("status").Str, completed.Raw)
	}
}

// sameJSON reports whether got is the value want is: numbers by value
// (an upstream's 0.0 is 0), anything else by its JSON text.
func sameJSON(got gjson.Result, want string) bool {
	w := gjson.Parse(want)
	if got.Type == gjson.Number && w.Type == gjson.Number {
		return got.Num == w.Num
	}
	return got.Raw == want
}

// respondingTenants are the tenants of threeUpstreams that answer the
// Responses API, one per kind of upstream.
var respondingTenants = []struct{ name, key string }{
	{"native", "rk-oa"},
	{"bridged chat", "rk-ch"},
	{"bridged anthropic", "rk-an"},
}

// postResponses posts body to /v1/responses as key and returns the
// Response objects it was answered with: the answer itself, or each
// stream event's response, named by where they came from.
func postResponses(t *testing.T, h *e2etest.Harness, key, body string, stream bool) (names []string, objs []gjson.Result) {
	t.Helper()
	if stream {
		body = strings.Replace(body, "{", `{"stream":true,`, 1)
	}
	res := h.Post("/v1/responses", key, "", body)
	if res.Status != 200 {
		t.Fatalf("POST /v1/responses: status %d: %s", res.Status, res.Body)
	}
	if !stream {
		return []string{"POST"}, []gjson.Result{gjson.Parse(res.Body)}
	}
	evNames, data := sseEvents(res.Body)
	for i, d := range data {
		if r := gjson.Get(d, "response"); r.Exists() {
			names, objs = append(names, "stream "+evNames[i]), append(objs, r)
		}
	}
	for _, want := range []string{"stream response.created", "stream response.in_progress", "stream response.completed"} {
		if !strings.Contains(strings.Join(names, ","), want) {
			t.Errorf("stream: events with a response: got %q, want %s among them", names, want)
		}
	}
	return names, objs
}

// A request that sets none of the settings: every Response object has
// every required member, with the schema's and OpenAI's defaults, and
// function tools echoed with strict (true, the Responses API's default,
// when the request left it out).
func TestResponsesCarryRequiredFields(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	const body = `{"model":"gpt-4.1","input":"hello","tools":[` +
		`{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}},` +
		`{"type":"function","name":"get_time","description":"The time","parameters":{"type":"object","properties":{}},"strict":false}]}`
	defaults := map[string]string{
		"presence_penalty": "0", "frequency_penalty": "0", "top_logprobs": "0", "max_tool_calls": "null",
		"service_tier": `"default"`, "safety_identifier": "null", "prompt_cache_key": "null", "user": "null",
		"tools.#.strict": "[true,false]", "tools.#.description": `[null,"The time"]`,
	}
	for _, tn := range respondingTenants {
		t.Run(tn.name, func(t *testing.T) {
			var ids []string
			for _, stream := range []bool{false, true} {
				names, objs := postResponses(t, h, tn.key, body, stream)
				for i, r := range objs {
					checkMembers(t, names[i], r, defaults)
					if r.Get("status").Str == "completed" {
						ids = append(ids, r.Get("id").Str)
					}
				}
			}
			if len(ids) != 2 {
				t.Fatalf("completed responses: got %q, want two", ids)
			}
			for _, id := range ids {
				status, r := call(t, h, tn.key, "GET", "/v1/responses/"+id, "")
				if status != 200 {
					t.Fatalf("GET %s: status %d: %s", id, status, r.Raw)
				}
				checkRequired(t, "GET "+id, r)
			}
		})
	}
}

// A request that sets every setting among the required members: bridged,
// each is echoed; native, each is the upstream's (which echoes what it
// was sent, and names the service tier it used for "auto", as OpenAI
// does).
func TestResponsesEchoSettings(t *testing.T) {
	h := e2etest.New(t, threeUpstreams())
	const body = `{"model":"gpt-4.1","input":"hello","presence_penalty":0.5,"frequency_penalty":0.25,"top_logprobs":3,` +
		`"max_tool_calls":4,"service_tier":"auto","safety_identifier":"user-7","prompt_cache_key":"agent-1","user":"u-1",` +
		`"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{}},"strict":true}]}`
	want := map[string]string{
		"presence_penalty": "0.5", "frequency_penalty": "0.25", "top_logprobs": "3", "max_tool_calls": "4",
		"safety_identifier": `"user-7"`, "prompt_cache_key": `"agent-1"`, "user": `"u-1"`, "tools.0.strict": "true",
	}
	for _, tn := range respondingTenants {
		t.Run(tn.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				names, objs := postResponses(t, h, tn.key, body, stream)
				for i, r := range objs {
					checkMembers(t, names[i], r, want)
					tier := `"auto"` // as asked: what the request said
					if tn.key == "rk-oa" && r.Get("status").Str == "completed" {
						tier = `"default"` // the tier the upstream says it used
					}
					if got := r.Get("service_tier").Raw; got != tier {
						t.Errorf("%s: service_tier: got %s, want %s", names[i], got, tier)
					}
				}
			}
		})
	}
}
