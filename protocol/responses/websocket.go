package responses

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/wire"
)

// The Responses API's WebSocket mode: a client sends each turn as a text
// message {"type":"response.create", ...the create-response body...} and
// gets the events a streamed POST /v1/responses answers with, one message
// each. What the messages mean is this package's; the socket is the
// proxy's.

// CreateEventType is the type of the one client event of WebSocket mode.
const CreateEventType = "response.create"

// CreateBody returns the body of the streamed POST /v1/responses that a
// WebSocket response.create event stands for: the event without its
// type, with stream true (a socket always streams; a stream or
// stream_options the event carries is overwritten or kept, as the
// create-response body takes it), and the event's previous_response_id.
// An event that is not a JSON object of type response.create is an
// *apierr.Error; anything else wrong with the body is ParseRequest's to
// find. event is not modified.
func CreateBody(event []byte) (body []byte, previous string, err error) {
	if !gjson.ValidBytes(event) {
		return nil, "", apierr.BadJSON
	}
	root := gjson.ParseBytes(event)
	if !root.IsObject() {
		return nil, "", apierr.BadEvent
	}
	if t := root.Get("type"); t.Type != gjson.String || t.Str != CreateEventType {
		return nil, "", apierr.BadEvent
	}
	body, err = sjson.DeleteBytes(append([]byte(nil), event...), "type")
	if err == nil {
		body, err = sjson.SetBytes(body, "stream", true)
	}
	if err != nil {
		return nil, "", apierr.BadJSON
	}
	if p := root.Get("previous_response_id"); p.Type == gjson.String {
		previous = p.Str
	}
	return body, previous, nil
}

// Continue returns body (a create-response body, see CreateBody) as the
// continuation of t, a response the server holds in memory and not in a
// store: t's items come first in input, then body's own input (a string
// is its user message), and previous_response_id is t's own (a warmup's
// that continued a stored response), or none: the items stand for t.
// body is not modified.
func Continue(body []byte, t *Turn) ([]byte, error) {
	all := appendItems([]byte{'['}, gjson.ParseBytes(t.Items))
	all = appendItems(all, gjson.GetBytes(body, "input"))
	out, err := sjson.SetRawBytes(append([]byte(nil), body...), "input", append(all, ']'))
	if err != nil {
		return nil, err
	}
	if t.Previous != "" {
		return sjson.SetBytes(out, "previous_response_id", t.Previous)
	}
	return sjson.DeleteBytes(out, "previous_response_id")
}

// appendItems appends the items of v (an array of items, or a string:
// one user message) to dst, an array being written ("[" and the items
// before), each after a comma but the first.
func appendItems(dst []byte, v gjson.Result) []byte {
	add := func(raw []byte) {
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = append(dst, raw...)
	}
	switch {
	case v.Type == gjson.String:
		b := append([]byte(`{"type":"message","role":"user","content":`), quote(v.Str)...)
		add(append(b, '}'))
	case v.IsArray():
		v.ForEach(func(_, item gjson.Result) bool {
			add([]byte(item.Raw))
			return true
		})
	}
	return dst
}

// Turn is what a socket keeps of a finished response to continue it in
// memory: its id, whether Recall stored it, and its input and output
// items.
type Turn struct {
	ID     string
	Stored bool
	// Items is a JSON array: the input items sent, then the output items.
	Items []byte
	// Previous is the previous_response_id the response was sent with
	// (one resolved from the store), which its continuation names too.
	Previous string
	// Instructions is a JSON array of the leading system and developer
	// items of the input sent: Recall does not store them (they are
	// instructions), and a client that continues a response sends only
	// its new items, so a continuation of a stored response gets them
	// back from the socket's memory (Reinstruct).
	Instructions []byte
}

// Terminal reads a WebSocket message (a stream event's data) that ends a
// response: response.completed or response.incomplete (done, with the
// response's id and store, whether it succeeded), response.failed or an
// error event (failed). Any other event is neither.
func Terminal(event []byte) (done, failed bool, response gjson.Result) {
	switch gjson.GetBytes(event, "type").Str {
	case "response.completed", "response.incomplete":
		return true, false, gjson.GetBytes(event, "response")
	case "response.failed", "error":
		return false, true, gjson.Result{}
	}
	return false, false, gjson.Result{}
}

// NewTurn is the Turn of a finished response (Terminal's) to a request
// whose body (a create-response body) is known: body's input items (a
// string input as its user message), then the response's output items.
func NewTurn(body []byte, response gjson.Result) Turn {
	items := appendItems([]byte{'['}, gjson.GetBytes(body, "input"))
	items = appendItems(items, response.Get("output"))
	instr := []byte{'['}
	gjson.GetBytes(body, "input").ForEach(func(_, item gjson.Result) bool {
		if r := role(item); r != wire.RoleSystem && r != wire.RoleDeveloper {
			return false
		}
		if len(instr) > 1 {
			instr = append(instr, ',')
		}
		instr = append(instr, item.Raw...)
		return true
	})
	return Turn{ID: response.Get("id").Str, Stored: response.Get("store").Bool(), Items: append(items, ']'),
		Previous: gjson.GetBytes(body, "previous_response_id").Str, Instructions: append(instr, ']')}
}

// Reinstruct returns body (a create-response body that continues t, a
// stored response, by previous_response_id) with t's leading system and
// developer items ahead of its input, unless its input starts with such
// items of its own: what OpenAI's previous_response_id carries over and
// Recall's store does not keep. body is not modified.
func Reinstruct(body []byte, t *Turn) ([]byte, error) {
	in := gjson.GetBytes(body, "input")
	if len(t.Instructions) <= 2 {
		return body, nil
	}
	if in.IsArray() {
		if r := role(in.Get("0")); r == wire.RoleSystem || r == wire.RoleDeveloper {
			return body, nil
		}
	}
	all := appendItems(appendItems([]byte{'['}, gjson.ParseBytes(t.Instructions)), in)
	return sjson.SetRawBytes(append([]byte(nil), body...), "input", append(all, ']'))
}

// Warmup reports whether a create-response body asks for no output
// (generate: false): OpenAI's warmup of a WebSocket turn, which
// prepares the request's state and returns a response id a later turn
// continues, without calling the model.
func Warmup(body []byte) bool { return gjson.GetBytes(body, "generate").Type == gjson.False }

// AppendWarmup appends the events that answer a warmup of req (named by
// req.ResponseID and req.Created): response.created,
// response.in_progress and response.completed, the Response with no
// output and no usage, completed at completed.
func AppendWarmup(dst []byte, req *wire.Request, completed int64) []byte {
	r := Renderer{req: req, cur: -1}
	dst = r.start(dst)
	a := wire.Answer{Protocol: wire.Responses, Model: req.Model, ResponseID: req.ResponseID, Created: req.Created,
		Completed: completed, Stop: wire.StopEnd}
	// Not End: an answer with no items is rendered with one empty
	// message, which a warmup does not have.
	return r.event(dst, "response.completed", func(b []byte) []byte {
		return appendResponse(append(b, `,"response":`...), req, &a, r.id, nil, false)
	})
}
