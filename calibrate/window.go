package calibrate

import (
	"regexp"
	"strconv"

	"github.com/tidwall/gjson"
)

// windowPatterns find the model's window in the message of an upstream's
// answer refusing a prompt as longer than the model takes, in the words
// of the providers and the servers that imitate them.
var windowPatterns = []*regexp.Regexp{
	// OpenAI, vLLM, LiteLLM: "This model's maximum context length is 8192
	// tokens. However, your messages resulted in 9000 tokens."
	regexp.MustCompile(`maximum context length is (\d+) tokens`),
	// Anthropic: "prompt is too long: 215123 tokens > 200000 maximum".
	regexp.MustCompile(`prompt is too long: \d+ tokens > (\d+) maximum`),
	// Gemini: "The input token count (1234567) exceeds the maximum number
	// of tokens allowed (1048576)."
	regexp.MustCompile(`exceeds the maximum number of tokens allowed \((\d+)\)`),
	// Mistral and others: "... exceeds the model's context length of 32768 ...".
	regexp.MustCompile(`context (?:length|window) of (\d+)`),
}

// WindowFromError returns the input window an upstream's error answer
// (its JSON body, in any protocol's error shape) states for the model,
// when the answer refuses a prompt as too long: the number its message
// gives, or llama.cpp's n_ctx. ok is false for any other answer, and for
// a refusal that states no number (OpenAI's Responses API says only that
// the input exceeds the context window).
func WindowFromError(body []byte) (window int, ok bool) {
	e := gjson.GetBytes(body, "error")
	if !e.Exists() {
		e = gjson.ParseBytes(body)
	}
	if n := e.Get("n_ctx").Int(); n > 0 && e.Get("type").Str == "exceed_context_size_error" {
		return int(n), true
	}
	msg := e.Get("message").Str
	if msg == "" {
		return 0, false
	}
	for _, re := range windowPatterns {
		if m := re.FindStringSubmatch(msg); m != nil {
			n, err := strconv.Atoi(m[1])
			if err == nil && n > 0 {
				return n, true
			}
		}
	}
	return 0, false
}
