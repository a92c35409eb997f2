package responses

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/recallproxy/recall/protocol/chat"
	"github.com/recallproxy/recall/wire"
)

// benchStreamText is the streamed answer of upstreamStream, a word a
// delta.
const benchStreamText = "Sure: here is a short answer of a few words, as a model would give it."

// upstreamStream is an OpenAI Responses stream as the load script's and
// proxy's benchmarks' upstreams send it: response.created and
// response.in_progress with the in-progress Response, one message item,
// a word a delta, the done events and response.completed with the whole
// Response.
func upstreamStream() []byte {
	object := func(status, output, usage string) string {
		return `{"id":"resp_up1","object":"response","created_at":1700000000,"status":"` + status + `","background":false,"error":null,"incomplete_details":null,` +
			`"instructions":null,"max_output_tokens":null,"model":"gpt-4o","output":[` + output + `],"parallel_tool_calls":true,"previous_response_id":null,` +
			`"reasoning":{"effort":null,"summary":null},"service_tier":"default","store":false,"temperature":1.0,"text":{"format":{"type":"text"}},` +
			`"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":` + usage + `,"metadata":{}}`
	}
	item := `{"id":"msg_up1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"` + benchStreamText + `"}],"role":"assistant"}`
	usage := `{"input_tokens":900,"input_tokens_details":{"cached_tokens":0},"output_tokens":18,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":918}`
	var b bytes.Buffer
	seq := 0
	ev := func(typ, fields string) {
		fmt.Fprintf(&b, "event: %s\ndata: {\"type\":%q,\"sequence_number\":%d%s}\n\n", typ, typ, seq, fields)
		seq++
	}
	ref := `,"item_id":"msg_up1","output_index":0,"content_index":0`
	ev("response.created", `,"response":`+object("in_progress", "", "null"))
	ev("response.in_progress", `,"response":`+object("in_progress", "", "null"))
	ev("response.output_item.added", `,"output_index":0,"item":{"id":"msg_up1","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
	ev("response.content_part.added", ref+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}`)
	for _, w := range strings.Fields(benchStreamText) {
		ev("response.output_text.delta", ref+`,"delta":"`+w+` ","logprobs":[]`)
	}
	ev("response.output_text.done", ref+`,"text":"`+benchStreamText+`","logprobs":[]`)
	ev("response.content_part.done", ref+`,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"`+benchStreamText+`"}`)
	ev("response.output_item.done", `,"output_index":0,"item":`+item)
	ev("response.completed", `,"response":`+object("completed", item, usage))
	return b.Bytes()
}

// streamThrough reads stream as the proxy's seam does a Responses
// upstream's stream for a Responses client: every event through the
// Assembler, its deltas rendered as they come, the Response's closing
// events at the end; dst gets the client's events.
func streamThrough(tb testing.TB, dst []byte, req *wire.Request, stream []byte) []byte {
	er := chat.NewEventReader(bytes.NewReader(stream), 1<<20)
	asm := Upstream{}.NewAssembler()
	ren := Ingress{}.NewRenderer(req)
	var deltas []wire.Delta
	for done := false; !done; {
		ev, err := er.Next()
		if err != nil {
			tb.Fatal(err)
		}
		if deltas, done, err = asm.Event(deltas[:0], ev.Name, ev.Data); err != nil {
			tb.Fatal(err)
		}
		for _, d := range deltas {
			dst = ren.Delta(dst, d)
		}
	}
	a, err := asm.Answer()
	if err != nil {
		tb.Fatal(err)
	}
	a.ResponseID, a.Created, a.Completed = req.ResponseID, req.Created, req.Created+1
	return ren.End(dst, &a)
}

// BenchmarkStreamNative is the Responses API streamed from a Responses
// upstream (the load script's recall-sync-responses row, streamed),
// the protocol's part of it: the upstream's events read and the client's
// rendered.
// relayThrough is streamThrough relaying: each event read by the
// Assembler's Relay and rendered by the Renderer's Event, then End.
func relayThrough(tb testing.TB, dst []byte, req *wire.Request, stream []byte) []byte {
	return relayStored(tb, dst, req, stream, nil)
}

// relayStored is relayThrough for a stored request: stored renders the
// stored copy of the finished Response, as the commit does before End.
func relayStored(tb testing.TB, dst []byte, req *wire.Request, stream []byte, stored func(*Renderer, *wire.Answer) []byte) []byte {
	er := chat.NewEventReader(bytes.NewReader(stream), 1<<20)
	asm := Upstream{}.NewAssembler()
	ren := Ingress{}.NewRenderer(req).(*Renderer)
	if !ren.Reads(asm) {
		tb.Fatal("the renderer does not read a Responses assembler's events")
	}
	rl := asm.(wire.Relayer)
	for done := false; !done; {
		ev, err := er.Next()
		if err != nil {
			tb.Fatal(err)
		}
		if _, done, err = rl.Relay(ev.Name, ev.Data); err != nil {
			tb.Fatal(err)
		}
		dst, _ = ren.Event(dst, ev.Raw)
	}
	a, err := rl.StoredAnswer()
	if err != nil {
		tb.Fatal(err)
	}
	a.ResponseID, a.Created, a.Completed = req.ResponseID, req.Created, req.Created+1
	if stored != nil && len(stored(ren, &a)) == 0 {
		tb.Fatal("no stored Response")
	}
	return ren.End(dst, &a)
}

func BenchmarkStreamNative(b *testing.B) { benchStream(b, streamThrough) }

// BenchmarkStreamRelay is BenchmarkStreamNative relayed: the events read
// by the Assembler's Relay and rendered by the Renderer's Event, as a
// Responses client of a Responses upstream gets them.
func BenchmarkStreamRelay(b *testing.B) { benchStream(b, relayThrough) }

// BenchmarkStreamRelayStored is BenchmarkStreamRelay for a stored
// request, as the proxy relays one: the stored copy of the finished
// Response rendered for the commit, then End.
func BenchmarkStreamRelayStored(b *testing.B) {
	benchStream(b, func(tb testing.TB, dst []byte, req *wire.Request, stream []byte) []byte {
		return relayStored(tb, dst, req, stream, func(ren *Renderer, a *wire.Answer) []byte { return ren.StoredResponse(nil, a) })
	})
}

// benchStream benchmarks the upstream stream through through.
func benchStream(b *testing.B, through func(testing.TB, []byte, *wire.Request, []byte) []byte) {
	req := benchRequestOf(b)
	stream := upstreamStream()
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = through(b, dst[:0], req, stream)
	}
	b.SetBytes(int64(len(dst)))
}
