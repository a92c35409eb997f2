package config

import (
	"reflect"
	"testing"
	"time"
)

func TestExpandVars(t *testing.T) {
	lookup := env(map[string]string{"A": "alpha", "EMPTY": "", "B_2": "b"})
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "no reference", in: "plain", want: "plain"},
		{name: "whole value", in: "${A}", want: "alpha"},
		{name: "inside text", in: "x-${A}-${B_2}-y", want: "x-alpha-b-y"},
		{name: "set but empty", in: "k${EMPTY}", want: "k"},
		{name: "lone dollar kept", in: "a$b$", want: "a$b$"},
		{name: "dollar dollar kept", in: "a$$b", want: "a$$b"},
		{name: "escaped reference", in: "$${A}", want: "${A}"},
		{name: "unset", in: "${NOPE}", wantErr: "environment variable NOPE is not set"},
		{name: "two unset", in: "${X1}${A}${X2}", wantErr: "environment variables X1, X2 are not set"},
		{name: "unclosed", in: "${A", wantErr: "malformed ${...} reference (write $${ for a literal ${)"},
		{name: "bad name", in: "${1A}", wantErr: "malformed ${...} reference (write $${ for a literal ${)"},
		{name: "empty name", in: "${}", wantErr: "malformed ${...} reference (write $${ for a literal ${)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := expandVars(tt.in, lookup)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("got (%q, %v), want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got (%q, %v), want %q", got, err, tt.want)
			}
		})
	}
}

func TestParseTenantExpansion(t *testing.T) {
	lookup := env(map[string]string{
		"KEY": "rk-from-env", "UP": "sk-upstream-secret", "HOST": "up.example", "BUDGET": "9000",
		"EMPTY": "", "ON": "false", "IDLE": "45m",
	})
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, tn *Tenant)
	}{
		{
			name: "secrets, url and header values",
			file: "id: a\napi_keys: [\"${KEY}\"]\nupstream:\n  base_url: https://${HOST}/v1\n  api_key: ${UP}\n  headers:\n    X-Org: \"org-${HOST}\"\n",
			check: func(t *testing.T, tn *Tenant) {
				if got := tn.APIKeys[0].Reveal(); got != "rk-from-env" {
					t.Errorf("api_keys[0]: got %q, want %q", got, "rk-from-env")
				}
				if got := tn.Upstream.BaseURL; got != "https://up.example/v1" {
					t.Errorf("base_url: got %q, want %q", got, "https://up.example/v1")
				}
				if got := tn.Upstream.APIKey.Reveal(); got != "sk-upstream-secret" {
					t.Errorf("api_key: got %q, want %q", got, "sk-upstream-secret")
				}
				if got := tn.Upstream.Headers["X-Org"]; got != "org-up.example" {
					t.Errorf("header: got %q, want %q", got, "org-up.example")
				}
			},
		},
		{
			name: "set but empty api_key is empty, not inherited",
			file: "id: a\napi_keys: [k]\nupstream:\n  api_key: ${EMPTY}\n",
			check: func(t *testing.T, tn *Tenant) {
				if got := tn.Upstream.APIKey.Reveal(); got != "" {
					t.Errorf("got %q, want empty", got)
				}
			},
		},
		{
			name: "non-string keys read the expanded text as their type",
			file: "id: a\napi_keys: [k]\nhistory:\n  budget_tokens: ${BUDGET}\n  idle_timeout: \"${IDLE}\"\nsummary:\n  enabled: ${ON}\n",
			check: func(t *testing.T, tn *Tenant) {
				if tn.History.BudgetTokens != 9000 {
					t.Errorf("budget_tokens: got %d, want 9000", tn.History.BudgetTokens)
				}
				if tn.History.IdleTimeout != Duration(45*time.Minute) {
					t.Errorf("idle_timeout: got %s, want 45m0s", tn.History.IdleTimeout)
				}
				if tn.Summary.Enabled {
					t.Errorf("summary.enabled: got true, want false")
				}
			},
		},
		{
			name: "escaped reference stays literal",
			file: "id: a\napi_keys: [\"pa$${ss}\"]\n",
			check: func(t *testing.T, tn *Tenant) {
				if got := tn.APIKeys[0].Reveal(); got != "pa${ss}" {
					t.Errorf("got %q, want %q", got, "pa${ss}")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn, err := parseTenant("t.yaml", []byte(tt.file), DefaultGlobal().Defaults, lookup, nil)
			if err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			tt.check(t, tn)
		})
	}
}

func TestParseTenantErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		lines []string // each must be a line of the error, exactly
	}{
		{
			name:  "unknown keys at every level, with path and line",
			file:  "id: a\napi_keys: [k]\napikey: x\nupstream:\n  baseurl: http://x\nhistory:\n  budget_token: 100\n",
			lines: []string{"t.yaml: apikey: unknown key (line 3)", "t.yaml: upstream.baseurl: unknown key (line 5)", "t.yaml: history.budget_token: unknown key (line 7)"},
		},
		{
			name:  "unset variables, each named",
			file:  "id: a\napi_keys: [\"${K1}\"]\nupstream:\n  api_key: ${K2}\n",
			lines: []string{"t.yaml: api_keys[0]: environment variable K1 is not set (line 2)", "t.yaml: upstream.api_key: environment variable K2 is not set (line 4)"},
		},
		{
			name:  "wrong types never quote the value",
			file:  "id: a\napi_keys: [k]\nhistory:\n  budget_tokens: lots\n  idle_timeout: soon\n  strategies: token_budget\nsummary:\n  enabled: maybe\nupstream:\n  api_key: {a: b}\n",
			lines: []string{"t.yaml: history.budget_tokens: want an integer, got a string (line 4)", "t.yaml: history.idle_timeout: want a duration such as \"30s\" (line 5)", "t.yaml: history.strategies: want a list of strings, got a string (line 6)", "t.yaml: summary.enabled: want true or false, got a string (line 8)", "t.yaml: upstream.api_key: want a string, got a mapping (line 10)"},
		},
		{
			name:  "duplicate key",
			file:  "id: a\napi_keys: [k]\nid: b\n",
			lines: []string{"t.yaml: id: duplicate key (line 3, first at line 1)"},
		},
		{
			name:  "aliases are refused",
			file:  "id: a\napi_keys: [k]\nhistory: &h\n  max_turns: 1\nsummary: *h\n",
			lines: []string{"t.yaml: summary: YAML aliases are not supported (line 5)"},
		},
		{
			name:  "empty file",
			file:  "# only a comment\n",
			lines: []string{"t.yaml: file is empty"},
		},
		{
			name: "validation: several problems at once",
			file: "id: Acme!\napi_keys: [\"\", \"sha256:abc\"]\nupstream:\n  base_url: /relative\n  timeout: 0s\nhistory:\n  conversation_header: \"X Bad\"\n  mode: sometimes\n  max_turns: -1\n  old_tool_result_chars: -1\n  strategies: [token_budget, token_budget, magic]\n  encoding: p50k\n  model_windows: {gpt-x: 0}\nsummary:\n  trigger_turns: 0\n  max_tokens: 0\n  max_calls_per_job: 0\n",
			lines: []string{
				"t.yaml: id: \"Acme!\" must match ^[a-z0-9][a-z0-9_-]{0,63}$",
				"t.yaml: api_keys[0]: must not be empty",
				"t.yaml: api_keys[1]: a sha256: key must be followed by 64 hex digits",
				"t.yaml: upstream.base_url: must be an absolute http:// or https:// URL",
				"t.yaml: upstream.timeout: must be > 0, got 0s",
				"t.yaml: history.conversation_header: \"X Bad\" is not a valid header name",
				"t.yaml: history.mode: must be one of auto, append, sync, off, got \"sometimes\"",
				"t.yaml: history.max_turns: must be >= 0, got -1",
				"t.yaml: history.old_tool_result_chars: must be >= 0, got -1",
				"t.yaml: history.strategies[1]: strategy \"token_budget\" listed twice",
				"t.yaml: history.strategies[2]: unknown strategy \"magic\" (known: passthrough, sliding_window, token_budget, tool_result_truncator)",
				"t.yaml: history.encoding: must be \"\", \"o200k_base\" or \"cl100k_base\", got \"p50k\"",
				"t.yaml: history.model_windows.gpt-x: must be > 0, got 0",
				"t.yaml: summary.trigger_turns: must be >= 1, got 0",
				"t.yaml: summary.max_tokens: must be > 0, got 0",
				"t.yaml: summary.max_calls_per_job: must be >= 1, got 0",
			},
		},
		{
			name: "history tools: unknown, twice, rounds out of range",
			file: "id: t\napi_keys: [k]\nhistory:\n  tools: [end_conversation, rm_rf]\n  tool_rounds: 0\n",
			lines: []string{
				"t.yaml: history.tools: unknown history tool \"rm_rf\" (known: end_conversation, get_conversation, search_conversations)",
				"t.yaml: history.tool_rounds: must be in [1, 10], got 0",
			},
		},
		{
			name:  "history tools: listed twice",
			file:  "id: t\napi_keys: [k]\nhistory:\n  tools: [get_conversation, get_conversation]\n",
			lines: []string{"t.yaml: history.tools: history tool \"get_conversation\" listed twice"},
		},
		{
			name:  "missing id and keys",
			file:  "history:\n  budget_tokens: 1000\n",
			lines: []string{"t.yaml: id: required", "t.yaml: api_keys: at least one key is required"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTenant("t.yaml", []byte(tt.file), DefaultGlobal().Defaults, env(nil), nil)
			if got := problemLines(err); !reflect.DeepEqual(got, tt.lines) {
				t.Errorf("got lines\n%q\nwant\n%q", got, tt.lines)
			}
			if got := len(unwrapAll(err)); got != len(tt.lines) {
				t.Errorf("got %d joined problems, want %d", got, len(tt.lines))
			}
		})
	}
}

func TestParseTenantInherits(t *testing.T) {
	defaults := DefaultGlobal().Defaults
	defaults.Upstream.Headers = map[string]string{"X-Default": "d"}
	defaults.History.ModelWindows = map[string]int{"gpt-x": 1000}
	defaults.Summary.Model = "gpt-4o-mini"
	file := "id: a\napi_keys: [k]\nupstream:\n  headers: {X-Own: o}\nhistory:\n  budget_tokens: 5000\n"
	tn, err := parseTenant("t.yaml", []byte(file), defaults, env(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := defaults.clone()
	want.History.BudgetTokens = 5000
	want.Upstream.Headers["X-Own"] = "o"
	if !reflect.DeepEqual(tn.Policy, want) {
		t.Errorf("got policy\n%+v\nwant\n%+v", tn.Policy, want)
	}
	if _, leaked := defaults.Upstream.Headers["X-Own"]; leaked {
		t.Errorf("got the tenant's header in the defaults, want the defaults untouched")
	}
}
