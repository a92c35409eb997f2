package proxy_test

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recallproxy/recall/config"
	"github.com/recallproxy/recall/internal/upstreamtest"
	"github.com/recallproxy/recall/proxy"
	"github.com/recallproxy/recall/store/badgerstore"
)

// A Recall server in front of an upstream: the client sends only each new
// message, and the upstream sees the whole conversation.
func Example() {
	upstream := upstreamtest.New() // answers "echo: <last user message>"
	defer upstream.Close()

	g := config.DefaultGlobal()
	g.Defaults.Upstream.BaseURL = upstream.URL()
	tenants, err := config.LoadTenants(g, os.LookupEnv)
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "recall-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	srv, err := proxy.New(proxy.Config{Tenants: proxy.StaticTenants{Set: tenants}, Store: store})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())

	client := openai.NewClient(
		option.WithBaseURL("http://"+ln.Addr().String()+"/v1"),
		option.WithAPIKey("sk-example"),
		option.WithHeader("X-Conversation-ID", "example-1"),
	)
	for _, text := range []string{"My name is Ada.", "What is my name?"} {
		resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		})
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.Choices[0].Message.Content)
	}
	fmt.Println(len(upstream.Last().Messages), "messages went upstream with the second question")
	// Output:
	// echo: My name is Ada.
	// echo: What is my name?
	// 3 messages went upstream with the second question
}
