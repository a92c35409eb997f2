package e2etest

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
)

// StreamMessage streams a Messages request with the Anthropic SDK and
// returns the message its events accumulate into, failing the test on an
// error.
func StreamMessage(t testing.TB, client anthropic.Client, p anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	stream := client.Messages.NewStreaming(context.Background(), p)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	return acc
}
