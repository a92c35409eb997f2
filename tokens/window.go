package tokens

import "strings"

// windows lists the input context windows of known models by name prefix,
// for the OpenAI, Anthropic and Gemini families. A prefix matches a model
// equal to it or continuing it after a '-' or '.' ("gpt-4" matches
// "gpt-4-0613", never "gpt-4o"), and the longest match wins.
var windows = []struct {
	prefix string
	tokens int
}{
	// OpenAI.
	{"gpt-5", 272000},
	{"gpt-4.1", 1047576},
	{"gpt-4.5", 128000},
	{"gpt-4o", 128000},
	{"gpt-4o-mini", 128000},
	{"chatgpt-4o", 128000},
	{"gpt-4-turbo", 128000},
	{"gpt-4-1106-preview", 128000},
	{"gpt-4-0125-preview", 128000},
	{"gpt-4-vision-preview", 128000},
	{"gpt-4-32k", 32768},
	{"gpt-4", 8192},
	{"gpt-3.5-turbo", 16385},
	{"gpt-oss", 131072},
	{"codex-mini", 200000},
	{"o1", 200000},
	{"o1-mini", 128000},
	{"o1-preview", 128000},
	{"o3", 200000},
	{"o4-mini", 200000},
	// Anthropic: every Claude from 3 on takes 200k (Sonnet's 1M is a beta
	// a request asks for).
	{"claude", 200000},
	{"claude-2", 100000},
	{"claude-instant", 100000},
	// Google Gemini.
	{"gemini", 1048576},
	{"gemini-1.5-pro", 2097152},
	{"gemini-1.0-pro", 32760},
	{"gemini-pro", 32760},
}

// UnknownWindow is the input window a model that no table or override
// knows is taken to have, for the default budget (DESIGN.md section 5):
// what most current models offer at least. A request is never refused
// against it: only a known window fails a request that exceeds it.
const UnknownWindow = 128000

// Window returns the input context window of model, in tokens, and whether
// it is known. overrides (model name prefix to window) is consulted first,
// longest matching prefix winning, against the name as given and then
// without its "provider/" (or Gemini's "models/") prefix; then a built-in
// table of the OpenAI, Anthropic and Gemini families by longest prefix. ok is false for models neither knows.
func Window(model string, overrides map[string]int) (tokens int, ok bool) {
	bare := normalizeModel(model)
	for _, name := range [...]string{model, bare} {
		best := -1
		for prefix, w := range overrides {
			if strings.HasPrefix(name, prefix) && len(prefix) > best {
				best, tokens = len(prefix), w
			}
		}
		if best >= 0 {
			return tokens, true
		}
	}
	best := -1
	for _, w := range windows {
		if matchesModel(bare, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	return tokens, best >= 0
}

// matchesModel reports whether model is prefix or continues it after a
// '-' or '.' separator.
func matchesModel(model, prefix string) bool {
	if !strings.HasPrefix(model, prefix) {
		return false
	}
	if len(model) == len(prefix) {
		return true
	}
	c := model[len(prefix)]
	return c == '-' || c == '.'
}
