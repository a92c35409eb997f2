// Package responses is OpenAI's Responses API (POST /v1/responses) as a
// Recall wire protocol: its Codec reads and edits stored items, Upstream
// talks to an upstream that speaks it, and Ingress serves clients that
// speak it, with Recall keeping the state OpenAI would keep server-side.
//
// The stored unit is one input or output item, in the exact JSON it
// arrived with: a message ({"type":"message","role","content"}, or the
// easy form without "type"), a function_call, a function_call_output, a
// reasoning item (kept whole, encrypted_content included, and sent back
// only to a Responses upstream), or another item type the API defines,
// kept as an opaque piece of its canonical role.
//
// Like rewrite, the package works on the bytes with gjson: nothing is
// decoded into structs on the request path, and values returned point
// into their input where a method's documentation says so.
package responses

import "github.com/recallproxy/recall/wire"

// init registers the protocol. Its kind of upstream is openai, which
// package chat registers (chat completions is the protocol it sends
// everything else in).
func init() {
	wire.Register(Codec{})
	wire.RegisterUpstream(wire.Responses, Upstream{})
}

// The interfaces of the seam this package implements.
var (
	_ wire.Codec       = Codec{}
	_ wire.Upstream    = Upstream{}
	_ wire.Ingress     = Ingress{}
	_ wire.ErrorShaper = Ingress{}
)

// Item types the package reads.
const (
	typeMessage            = "message"
	typeFunctionCall       = "function_call"
	typeFunctionCallOutput = "function_call_output"
	typeReasoning          = "reasoning"
	typeItemReference      = "item_reference"
)

// Content part types.
const (
	partInputText  = "input_text"
	partOutputText = "output_text"
	partInputImage = "input_image"
	partInputFile  = "input_file"
	partRefusal    = "refusal"
)
