package chat_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/recallproxy/recall/protocol/chat"
)

func ExampleRequest_AppendBody() {
	body := []byte(`{"model":"gpt-4o", "messages":[{"role":"user","content":"and tomorrow?"}], "stream":true}`)
	r, err := chat.ParseRequest(body)
	if err != nil {
		panic(err)
	}
	history := [][]byte{
		[]byte(`{"role":"user","content":"weather today?"}`),
		[]byte(`{"role":"assistant","content":"Sunny."}`),
		r.Messages[0].Raw,
	}
	fmt.Println(string(r.AppendBody(nil, history)))
	// Output:
	// {"model":"gpt-4o", "messages":[{"role":"user","content":"weather today?"},{"role":"assistant","content":"Sunny."},{"role":"user","content":"and tomorrow?"}], "stream":true}
}

func ExampleParseRequest_error() {
	_, err := chat.ParseRequest([]byte(`{"messages":[{"role":"robot","content":"hi"}]}`))
	if e, ok := err.(*chat.Error); ok {
		fmt.Println(e.Param, e.Code)
	}
	// Output:
	// messages[0].role invalid_value
}

func ExampleAssembler() {
	stream := "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
		": keepalive\n\n" +
		"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi!\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
	er := chat.NewEventReader(strings.NewReader(stream), 1<<20)
	var a chat.Assembler
	for {
		ev, err := er.Next()
		if err == io.EOF {
			break
		}
		// A proxy writes ev.Raw to the client here, before parsing.
		if len(ev.Data) > 0 {
			if err := a.Add(ev.Data); err != nil {
				panic(err)
			}
		}
	}
	r := a.Reply()
	fmt.Println(a.Done(), r.FinishReason, string(r.Message))
	// Output:
	// true stop {"role":"assistant","content":"Hi!"}
}
