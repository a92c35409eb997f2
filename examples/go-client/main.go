// Command go-client talks to Recall with the official OpenAI Go SDK: it
// names a conversation with a header and sends only each new message;
// Recall supplies the history.
//
//	go run ./examples/go-client -url http://127.0.0.1:8080/v1 -conv demo "My name is Ada." "What is my name?"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/v1", "Recall's base URL")
	conv := flag.String("conv", "go-client-demo", "conversation id")
	model := flag.String("model", "gpt-4o-mini", "model")
	stream := flag.Bool("stream", false, "stream the answers")
	flag.Parse()

	client := openai.NewClient(
		option.WithBaseURL(*url),
		option.WithAPIKey(os.Getenv("OPENAI_API_KEY")),
		option.WithHeader("X-Conversation-ID", *conv),
	)
	ctx := context.Background()
	for _, text := range flag.Args() {
		params := openai.ChatCompletionNewParams{
			Model:    *model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		}
		fmt.Printf("> %s\n", text)
		if *stream {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			for s.Next() {
				if c := s.Current(); len(c.Choices) > 0 {
					fmt.Print(c.Choices[0].Delta.Content)
				}
			}
			fmt.Println()
			if err := s.Err(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			continue
		}
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(resp.Choices[0].Message.Content)
	}
}
