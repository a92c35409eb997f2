package proxy

import (
	"bytes"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
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
}

// routes map the ingress paths served through the seam to their protocol.
var routes = []struct {
	path  []byte
	proto wire.Protocol
}{
	{[]byte("/v1/responses"), wire.Responses},
	{[]byte("/v1/messages"), wire.Messages},
}

// seamRoute returns the protocol served at path, if any.
func seamRoute(path []byte) *protocol {
	for _, r := range routes {
		if bytes.Equal(path, r.path) {
			return protocols[r.proto]
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
