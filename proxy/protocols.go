package proxy

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/valyala/fasthttp"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/protocol/gemini"
	"github.com/recallproxy/recall/protocol/messages"
	"github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/wire"
)

// protocols are the wire protocols Recall speaks, by their wire value:
// a new protocol is its package and one entry here. What a protocol's
// API asks beyond the defaults (its paths, where the key goes, its error
// shape, how its turns are shaped) its package brings through the
// optional interfaces of wire, which init reads into the entry.
var protocols = map[wire.Protocol]*protocol{
	wire.ChatCompletions: {proto: wire.ChatCompletions, route: "chat", ingress: chat.Protocol{}, upstream: chat.Protocol{}, check: chat.CheckRequest},
	wire.Responses:       {proto: wire.Responses, route: "responses", ingress: responses.Ingress{}, upstream: responses.Upstream{}, renders: true, resolve: resolveResponses, answers: nameResponse},
	wire.Messages:        {proto: wire.Messages, route: "messages", ingress: messages.Ingress{}, upstream: messages.Upstream{}},
	wire.Gemini:          {proto: wire.Gemini, route: "gemini", ingress: gemini.Ingress{}, upstream: gemini.Upstream{}},
}

// protocol is what the proxy knows of a wire protocol: its package's two
// sides, the hooks of the Responses state, which are the proxy's, and
// what init read from the package.
type protocol struct {
	proto wire.Protocol
	// route names it in metrics and logs.
	route    string
	ingress  wire.Ingress
	upstream wire.Upstream
	// renders is set when its answers are always rendered by Recall, even
	// from an upstream of the same protocol (the Responses API: its
	// answers carry Recall's ids).
	renders bool
	// resolve, if set, finds the conversation a request names in its body
	// (conv: the one the header or path prefix named).
	resolve func(x *exchange, req *wire.Request, conv string) (string, error)
	// answers, if set, names the answer before it is made (req.ResponseID),
	// once the request is planned (x.dec, for a recorded exchange).
	answers func(x *exchange, req *wire.Request)
	// check, if set, validates a body that takes the pipeline's
	// same-protocol branch (pipeline.AsSent) without decoding it, and
	// reports whether it asks for a stream; without it every request is
	// decoded.
	check func(body []byte) (stream bool, err error)

	// The rest is set by init from the package.

	// path is "/v1" and the upstream's Path: where a call of the protocol
	// goes under the tenant's base URL and, unless the ingress reads its
	// path (pathIngress), the route its clients POST to.
	path []byte
	// pathIngress is the ingress when it reads fields from its path.
	pathIngress wire.PathIngress
	// modelPath is the upstream when its path names the model.
	modelPath wire.ModelPath
	// render and errorEvent shape an error for its clients, as a body and
	// as a stream's event (OpenAI's shape unless wire.ErrorShaper).
	render     func(*apierr.Error) []byte
	errorEvent func(*apierr.Error) []byte
	// keyHeader, if set, is the header the upstream key goes in instead
	// of Authorization: Bearer; defaultHeader and defaultValue, if set, a
	// header sent when the request has none of its own.
	keyHeader                   []byte
	defaultHeader, defaultValue string
	// mark, if set, appends a body for its upstream with the end of the
	// curated history marked (last: the index of the last history
	// message among the sent messages), when the context went as stored.
	mark func(dst []byte, req *wire.Request, instructions, msgs [][]byte, last int) ([]byte, bool, error)
	// join, if set, reshapes the messages sent as stored where the
	// protocol wants turns shaped otherwise than they were stored (last:
	// the index of the last history message, or -1, as it is after).
	join func(msgs [][]byte, roles []string, last int) ([][]byte, int)
}

// served are the protocols in their wire order, for seamRoute.
var served []*protocol

// init completes each protocol from the optional interfaces of wire its
// package implements, so that no request asserts one.
func init() {
	for _, p := range protocols {
		p.path = []byte("/v1" + p.upstream.Path())
		p.pathIngress, _ = p.ingress.(wire.PathIngress)
		p.modelPath, _ = p.upstream.(wire.ModelPath)
		p.render, p.errorEvent = errorBody, errorEvent
		if es, ok := p.ingress.(wire.ErrorShaper); ok {
			p.render = func(e *apierr.Error) []byte {
				return es.AppendError(nil, e.Status, e.Type, e.Code, e.Param, e.Message)
			}
			p.errorEvent = func(e *apierr.Error) []byte {
				return es.AppendErrorEvent(nil, e.Status, e.Type, e.Code, e.Param, e.Message)
			}
		}
		if kh, ok := p.upstream.(wire.KeyHeader); ok {
			p.keyHeader = []byte(kh.KeyHeader())
		}
		if dh, ok := p.upstream.(wire.DefaultHeader); ok {
			p.defaultHeader, p.defaultValue = dh.DefaultHeader()
		}
		if cm, ok := p.upstream.(wire.CacheMarker); ok {
			p.mark = cm.AppendMarkedBody
		}
		if tj, ok := p.upstream.(wire.TurnJoiner); ok {
			p.join = tj.JoinTurns
		}
		served = append(served, p)
	}
	slices.SortFunc(served, func(a, b *protocol) int { return cmp.Compare(a.proto, b.proto) })
}

// request sets dst's method, URI and headers for a call of this
// (upstream) protocol made for rc's request req, which came in protocol
// in: the path under the tenant's base URL is the protocol's (PathFor's,
// with its query, for a model in the path), the key where the protocol
// reads it. A translated request, or one to a model path, does not carry
// the client's query (Claude Code's ?beta=true, a Gemini client's ?key=).
func (up *protocol) request(dst *fasthttp.Request, rc *fasthttp.RequestCtx, c caller, req *wire.Request, in wire.Protocol) {
	if up.modelPath == nil {
		upstreamRequest(dst, rc, c, up.path, false)
	} else {
		path, query := up.modelPath.PathFor(req.Model, req.Stream)
		upstreamRequest(dst, rc, c, []byte("/v1"+path), false)
		dst.URI().SetQueryString(query)
	}
	if up.keyHeader != nil {
		if auth := dst.Header.Peek(fasthttp.HeaderAuthorization); len(auth) > len("Bearer ") {
			dst.Header.SetBytesKV(up.keyHeader, auth[len("Bearer "):])
			dst.Header.Del(fasthttp.HeaderAuthorization)
		}
	}
	if up.defaultHeader != "" && len(dst.Header.Peek(up.defaultHeader)) == 0 {
		dst.Header.Set(up.defaultHeader, up.defaultValue)
	}
	if up.proto != in && up.modelPath == nil {
		dst.URI().SetQueryStringBytes(nil)
	}
}

// seamRoute returns the protocol served at path, if any: one whose
// ingress is served at its upstream's path, or one whose ingress reads
// fields from its path (wire.PathIngress). Chat completions' path is
// routed before (Server.chat).
func seamRoute(path []byte) *protocol {
	for _, p := range served {
		if p.pathIngress == nil && bytes.Equal(path, p.path) {
			return p
		}
	}
	for _, p := range served {
		if p.pathIngress != nil && p.pathIngress.Serves(path) {
			return p
		}
	}
	return nil
}
