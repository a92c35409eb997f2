package summary

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/uplink"
	"github.com/recallproxy/recall/wire"
)

// errUpstream wraps a summariser call that failed (transport error, non-2xx
// answer, or an answer without text): the job is retried.
var errUpstream = errors.New("summary: upstream")

// maxAnswerBytes bounds the summariser's answer read.
const maxAnswerBytes = 4 << 20

// answer is one summariser call's result, and what its record says of
// it: the upstream's status (0: none came) and the time to its answer
// (read whole).
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
// The request is in the upstream's own protocol (DESIGN.md section 6),
// made by its package as it makes a translated request: a chat
// completions request of Recall's own (no body to keep), with the
// instructions as a system message and the transcript as one user
// message, encoded by the upstream protocol's codec and written by its
// AppendBody; sent to its path (its model path when it names the
// model), with the key in its header (Authorization: Bearer unless it
// has one) and its default header; the answer read by its ParseAnswer.
func (m *Manager) call(ctx context.Context, t *config.Tenant, cred, model, system, user string, maxTokens int) (answer, error) {
	proto, ok := wire.UpstreamFor(t.Upstream.Protocol, wire.ChatCompletions)
	up := wire.UpstreamOf(proto)
	if !ok || up == nil {
		return answer{}, fmt.Errorf("summary: no upstream for upstream.protocol %q", t.Upstream.Protocol)
	}
	codec := wire.For(proto)
	instructions, err := codec.Encode(nil, []wire.Message{{Role: wire.RoleSystem, Parts: []wire.Part{{Kind: wire.Text, Text: system}}}})
	if err != nil {
		return answer{}, fmt.Errorf("summary: encode instructions: %w", err)
	}
	msgs, err := codec.Encode(nil, []wire.Message{{Role: wire.RoleUser, Parts: []wire.Part{{Kind: wire.Text, Text: user}}}})
	if err != nil {
		return answer{}, fmt.Errorf("summary: encode transcript: %w", err)
	}
	body, err := up.AppendBody(nil, &wire.Request{Protocol: wire.ChatCompletions, Model: model, MaxTokens: maxTokens}, instructions, msgs)
	if err != nil {
		return answer{}, fmt.Errorf("summary: request body: %w", err)
	}
	path := up.Path()
	if mp, ok := up.(wire.ModelPath); ok {
		var query string
		if path, query = mp.PathFor(model, false); query != "" {
			path += "?" + query
		}
	}
	a, raw, err := m.post(ctx, t, path, body, func(h *fasthttp.RequestHeader) {
		if key := t.Upstream.Credential(cred); key != "" {
			if kh, ok := up.(wire.KeyHeader); ok {
				h.Set(kh.KeyHeader(), key)
			} else {
				h.Set("Authorization", "Bearer "+key)
			}
		}
		if dh, ok := up.(wire.DefaultHeader); ok {
			h.Set(dh.DefaultHeader())
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

// post sends body to the tenant's upstream at path (under its base URL),
// with the tenant's extra headers and the credential cred sets, within
// the tenant's timeout, and reads the answer: a non-2xx one is an error
// (errUpstream) that names the upstream's message.
//
// It goes over the upstream link the proxy's calls take (uplink.Do), on
// a goroutine of its own so that ctx's end (Close) does not wait for the
// answer: an abandoned call's request and response are the goroutine's
// alone, and it drops them when the answer or the timeout comes.
func (m *Manager) post(ctx context.Context, t *config.Tenant, path string, body []byte, cred func(*fasthttp.RequestHeader)) (answer, []byte, error) {
	timeout := time.Duration(t.Upstream.Timeout)
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	req, resp := new(fasthttp.Request), new(fasthttp.Response)
	req.SetRequestURI(strings.TrimRight(t.Upstream.BaseURL, "/") + path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.Header.Set("Accept", "application/json")
	cred(&req.Header)
	for k, v := range t.Upstream.Headers {
		req.Header.Set(k, v)
	}
	req.SetBodyRaw(body)
	sent := m.cfg.Now()
	done := make(chan error, 1)
	go func() { done <- uplink.Do(m.client, req, resp, timeout) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return answer{}, nil, fmt.Errorf("%w: %w", errUpstream, err)
	}
	a := answer{status: resp.StatusCode(), firstByte: m.cfg.Now().Sub(sent)}
	raw := resp.Body()
	if a.status < 200 || a.status > 299 {
		msg := gjson.GetBytes(raw, "error.message").Str
		return a, nil, fmt.Errorf("%w: status %d: %s", errUpstream, a.status, cut(msg, 200))
	}
	return a, raw, nil
}

// defaultTimeout bounds a summariser call of a tenant that sets no
// upstream.timeout (config's default is 10m).
const defaultTimeout = 10 * time.Minute
