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
func (m *Manager) call(ctx context.Context, t *config.Tenant, cred, model, system, user string, maxTokens int) (answer, error) {
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

	if d := time.Duration(t.Upstream.Timeout); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	url := strings.TrimRight(t.Upstream.BaseURL, "/") + "/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if key := t.Upstream.Credential(cred); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range t.Upstream.Headers {
		req.Header.Set(k, v)
	}
	sent := m.cfg.Now()
	resp, err := m.client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%w: %w", errUpstream, err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, firstByte: m.cfg.Now().Sub(sent)}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return a, fmt.Errorf("%w: read answer: %w", errUpstream, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := gjson.GetBytes(raw, "error.message").Str
		return a, fmt.Errorf("%w: status %d: %s", errUpstream, resp.StatusCode, cut(msg, 200))
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
