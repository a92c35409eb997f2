package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/protocol/messages"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// protocol is what the proxy knows of a wire protocol: its package's two
// sides, how its clients see errors, and the hooks of its state.
type protocol struct {
	proto wire.Protocol
	// route names it in metrics and logs.
	route    string
	ingress  wire.Ingress
	upstream wire.Upstream
	// render and errorEvent shape an error for its clients, as a body and
	// as a stream's event.
	render     func(*apierr.Error) []byte
	errorEvent func(*apierr.Error) []byte
	// renders is set when its answers are always rendered by Recall, even
	// from an upstream of the same protocol (the Responses API: its
	// answers carry Recall's ids).
	renders bool
	// resolve, if set, finds the conversation a request names in its body
	// (conv: the one the header or path prefix named).
	resolve func(x *exchange, req *wire.Request, conv string) (string, error)
	// answers, if set, names the answer before it is made (req.ResponseID),
	// once the request is planned (x.plan, for a recorded exchange).
	answers func(x *exchange, req *wire.Request)
	// credential, if set, puts the upstream key where its API reads it
	// (upstreamRequest set Authorization: Bearer).
	credential func(req *fasthttp.Request, c caller)
	// mark, if set, marks the end of the curated history in a body for
	// its upstream (last: the index of the last history message among the
	// sent messages), when the context went as stored.
	mark func(body []byte, last int) []byte
	// join, if set, reshapes the messages sent as stored where the
	// protocol wants turns shaped otherwise than they were stored (last:
	// the index of the last history message, or -1, as it is after).
	join func(msgs [][]byte, last int) ([][]byte, int)
}

// protocols are the wire protocols Recall speaks, by their wire value: a
// new protocol is its package and one entry here.
var protocols = map[wire.Protocol]*protocol{
	wire.ChatCompletions: {proto: wire.ChatCompletions, route: "chat", ingress: chat.Protocol{}, upstream: chat.Protocol{},
		render: apierr.OpenAI, errorEvent: errorEvent},
	wire.Responses: {proto: wire.Responses, route: "responses", ingress: responses.Ingress{}, upstream: responses.Upstream{},
		render: apierr.OpenAI, errorEvent: responsesErrorEvent, renders: true, resolve: resolveResponses, answers: nameResponse},
	wire.Messages: {proto: wire.Messages, route: "messages", ingress: messages.Ingress{}, upstream: messages.Upstream{},
		render: apierr.Anthropic, errorEvent: anthropicErrorEvent, credential: anthropicCredential, mark: messages.MarkHistoryEnd, join: messages.JoinResults},
	wire.Gemini: {proto: wire.Gemini, route: "gemini", ingress: gemini.Ingress{}, upstream: gemini.Upstream{}},
}

// errorShaper is an Ingress that shapes Recall's errors for its clients
// itself, as a body and as a stream's closing event.
type errorShaper interface {
	ErrorBody(*apierr.Error) []byte
	ErrorEvent(*apierr.Error) []byte
}

// init completes each protocol from what its package brings (the
// optional interfaces of wire, and errorShaper), where its entry above
// says nothing.
func init() {
	for _, p := range protocols {
		if es, ok := p.ingress.(errorShaper); ok && p.render == nil {
			p.render, p.errorEvent = es.ErrorBody, es.ErrorEvent
		}
		if kh, ok := p.upstream.(wire.KeyHeader); ok && p.credential == nil {
			p.credential = keyHeader([]byte(kh.KeyHeader()))
		}
	}
}

// keyHeader returns a credential hook that moves the key upstreamRequest
// set as Authorization: Bearer into the header name.
func keyHeader(name []byte) func(*fasthttp.Request, caller) {
	return func(req *fasthttp.Request, _ caller) {
		if auth := req.Header.Peek(fasthttp.HeaderAuthorization); len(auth) > len("Bearer ") {
			req.Header.SetBytesKV(name, auth[len("Bearer "):])
			req.Header.Del(fasthttp.HeaderAuthorization)
		}
	}
}

// request sets dst's method, URI and headers for a call of this
// (upstream) protocol made for rc's request req, which came in protocol
// in: the path under the tenant's base URL is the protocol's (PathFor's,
// with its query, for a model in the path), the key where the protocol
// reads it. A translated request, or one to a model path, does not carry
// the client's query (Claude Code's ?beta=true, a Gemini client's ?key=).
func (up *protocol) request(dst *fasthttp.Request, rc *fasthttp.RequestCtx, c caller, req *wire.Request, in wire.Protocol) {
	mp, modelPath := up.upstream.(wire.ModelPath)
	if !modelPath {
		upstreamRequest(dst, rc, c, []byte("/v1"+up.upstream.Path()), false)
	} else {
		path, query := mp.PathFor(req.Model, req.Stream)
		upstreamRequest(dst, rc, c, []byte("/v1"+path), false)
		dst.URI().SetQueryString(query)
	}
	if up.credential != nil {
		up.credential(dst, c)
	}
	if up.proto != in && !modelPath {
		dst.URI().SetQueryStringBytes(nil)
	}
}

// routes map the ingress paths served through the seam to their protocol.
var routes = []struct {
	path  []byte
	proto wire.Protocol
}{
	{[]byte("/v1/responses"), wire.Responses},
	{[]byte("/v1/messages"), wire.Messages},
}

// seamRoute returns the protocol served at path, if any: an exact route,
// or a protocol whose ingress reads fields from its path
// (wire.PathIngress).
func seamRoute(path []byte) *protocol {
	for _, r := range routes {
		if bytes.Equal(path, r.path) {
			return protocols[r.proto]
		}
	}
	for _, p := range protocols {
		if pi, ok := p.ingress.(wire.PathIngress); ok && pi.Serves(path) {
			return p
		}
	}
	return nil
}

// responsesErrorEvent is e as a Responses stream's error event, for a
// stream with no events before it; a stream Recall rendered ends with its
// renderer's (errorRenderer), numbered after the events it rendered.
func responsesErrorEvent(e *apierr.Error) []byte {
	return responses.AppendErrorEvent(nil, 0, e.Code, e.Message)
}

// anthropicErrorEvent is e as an Anthropic stream's error event.
func anthropicErrorEvent(e *apierr.Error) []byte {
	b := []byte("event: error\ndata: ")
	b = append(b, apierr.Anthropic(e)...)
	return append(b, "\n\n"...)
}

// anthropicVersion is the API version asked for when the client named none
// (a chat or Responses client's request translated).
const anthropicVersion = messages.APIVersion

// anthropicCredential sends the upstream key as Anthropic reads it.
func anthropicCredential(req *fasthttp.Request, _ caller) {
	if auth := req.Header.Peek(fasthttp.HeaderAuthorization); len(auth) > len("Bearer ") {
		req.Header.Set("x-api-key", string(auth[len("Bearer "):]))
		req.Header.Del(fasthttp.HeaderAuthorization)
	}
	if len(req.Header.Peek("anthropic-version")) == 0 {
		req.Header.Set("anthropic-version", anthropicVersion)
	}
}
