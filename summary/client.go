package summary

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/protocol/messages"
	"github.com/recallproxy/recall/wire"
)

// errUpstream wraps a summariser call that failed (transport error, non-2xx
// answer, or an answer without text): the job is retried.
var errUpstream = errors.New("summary: upstream")

// maxAnswerBytes bounds the summariser's answer read.
const maxAnswerBytes = 4 << 20

// answer is one summariser call's result, and what its record says of
// it: the upstream's status (0: none came) and the time to its headers.
type answer struct {
	text                   string
	promptTokens, complTok int
	status                 int
	firstByte              time.Duration
}

// call sends one summariser request to the tenant's upstream: the same
// base URL, credential swap, extra headers and timeout as its chat calls.
// cred is the triggering request's credential, used when the tenant has
// no upstream key (pass-through); it is never logged.
//
// The request is in the upstream's own protocol (DESIGN.md section 6):
// chat completions, Anthropic Messages for an upstream that speaks only
// those (protocol: anthropic), or Gemini's generateContent (protocol:
// gemini), with its credential header.
func (m *Manager) call(ctx context.Context, t *config.Tenant, cred, model, system, user string, maxTokens int) (answer, error) {
	switch up, _ := wire.UpstreamFor(t.Upstream.Protocol, wire.ChatCompletions); up {
	case wire.Messages:
		return m.callMessages(ctx, t, cred, model, system, user, maxTokens)
	case wire.Gemini:
		return m.callGemini(ctx, t, cred, model, system, user, maxTokens)
	}
	body := make([]byte, 0, len(system)+len(user)+128)
	body = append(body, `{"model":`...)
	body = gjson.AppendJSONString(body, model)
	body = append(body, `,"messages":[{"role":"system","content":`...)
	body = gjson.AppendJSONString(body, system)
	body = append(body, `},{"role":"user","content":`...)
	body = gjson.AppendJSONString(body, user)
	// max_completion_tokens, not the deprecated max_tokens that reasoning
	// models refuse; the answer is cut to the limit all the same
	// (plan.FitSummary), for an upstream that runs on past it.
	body = append(body, `}],"max_completion_tokens":`...)
	body = strconv.AppendInt(body, int64(maxTokens), 10)
	body = append(body, `,"stream":false}`...)

	a, raw, err := m.post(ctx, t, "/chat/completions", body, func(h http.Header) {
		if key := t.Upstream.Credential(cred); key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
	})
	if err != nil {
		return a, err
	}
	r := gjson.ParseBytes(raw)
	a.text = r.Get("choices.0.message.content").Str
	a.promptTokens = int(r.Get("usage.prompt_tokens").Int())
	a.complTok = int(r.Get("usage.completion_tokens").Int())
	if strings.TrimSpace(a.text) == "" {
		return a, fmt.Errorf("%w: answer without text", errUpstream)
	}
	return a, nil
}

// callMessages is call to an Anthropic Messages upstream: the body its
// protocol package builds for a translated request (the instructions as
// system, the transcript as the one user message, max_tokens), the key
// as x-api-key with anthropic-version, the answer read by its parser.
func (m *Manager) callMessages(ctx context.Context, t *config.Tenant, cred, model, system, user string, maxTokens int) (answer, error) {
	sys := append(append([]byte(`{"role":"system","content":`), mustQuote(system)...), '}')
	msg := append(append([]byte(`{"role":"user","content":`), mustQuote(user)...), '}')
	up := messages.Upstream{}
	body, err := up.AppendBody(nil, &wire.Request{Protocol: wire.ChatCompletions, Model: model, MaxTokens: maxTokens},
		[][]byte{sys}, [][]byte{msg})
	if err != nil {
		return answer{}, err
	}
	a, raw, err := m.post(ctx, t, up.Path(), body, func(h http.Header) {
		if key := t.Upstream.Credential(cred); key != "" {
			h.Set("X-Api-Key", key)
		}
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", messages.APIVersion)
		}
	})
	if err != nil {
		return a, err
	}
	return readAnswer(a, raw, up.ParseAnswer)
}

// callGemini is call to a Gemini upstream: the body its protocol package
// builds for a translated request (the instructions as
// systemInstruction, the transcript as the one user content,
// maxOutputTokens), sent to the model's path with the key as
// x-goog-api-key, the answer read by its parser.
func (m *Manager) callGemini(ctx context.Context, t *config.Tenant, cred, model, system, user string, maxTokens int) (answer, error) {
	sys := append(append([]byte(`{"role":"system","parts":[{"text":`), mustQuote(system)...), "}]}"...)
	msg := append(append([]byte(`{"role":"user","parts":[{"text":`), mustQuote(user)...), "}]}"...)
	up := gemini.Upstream{}
	body, err := up.AppendBody(nil, &wire.Request{Protocol: wire.ChatCompletions, Model: model, MaxTokens: maxTokens},
		[][]byte{sys}, [][]byte{msg})
	if err != nil {
		return answer{}, err
	}
	path, _ := up.PathFor(model, false)
	a, raw, err := m.post(ctx, t, path, body, func(h http.Header) {
		if key := t.Upstream.Credential(cred); key != "" {
			h.Set(up.KeyHeader(), key)
		}
	})
	if err != nil {
		return a, err
	}
	return readAnswer(a, raw, up.ParseAnswer)
}

// readAnswer reads raw, a whole answer, with parse (its upstream
// protocol's parser) into a: the text and the token counts. An answer
// parse rejects, or one without text, is an upstream error.
func readAnswer(a answer, raw []byte, parse func([]byte) (wire.Answer, error)) (answer, error) {
	ans, err := parse(raw)
	if err != nil {
		return a, fmt.Errorf("%w: %w", errUpstream, err)
	}
	a.text = answerText(ans)
	a.promptTokens, a.complTok = ans.Usage.InputTokens, ans.Usage.OutputTokens
	if strings.TrimSpace(a.text) == "" {
		return a, fmt.Errorf("%w: answer without text", errUpstream)
	}
	return a, nil
}

// answerText is the text parts of an answer, joined.
func answerText(a wire.Answer) string {
	var text strings.Builder
	for _, p := range a.Message.Parts {
		if p.Kind == wire.Text {
			text.WriteString(p.Text)
		}
	}
	return text.String()
}

func mustQuote(s string) []byte { return gjson.AppendJSONString(nil, s) }

// post sends body to the tenant's upstream at path (under its base URL),
// with the tenant's extra headers and the credential cred sets, within
// the tenant's timeout, and reads the answer: a non-2xx one is an error
// (errUpstream) that names the upstream's message.
func (m *Manager) post(ctx context.Context, t *config.Tenant, path string, body []byte, cred func(http.Header)) (answer, []byte, error) {
	if d := time.Duration(t.Upstream.Timeout); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	url := strings.TrimRight(t.Upstream.BaseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return answer{}, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	cred(req.Header)
	for k, v := range t.Upstream.Headers {
		req.Header.Set(k, v)
	}
	sent := m.cfg.Now()
	resp, err := m.client.Do(req)
	if err != nil {
		return answer{}, nil, fmt.Errorf("%w: %w", errUpstream, err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, firstByte: m.cfg.Now().Sub(sent)}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return a, nil, fmt.Errorf("%w: read answer: %w", errUpstream, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := gjson.GetBytes(raw, "error.message").Str
		return a, nil, fmt.Errorf("%w: status %d: %s", errUpstream, resp.StatusCode, cut(msg, 200))
	}
	return a, raw, nil
}
