// Command go-client talks to Recall with the official OpenAI Go SDK: it
// names a conversation with a header and sends only each new message;
// Recall supplies the history.
//
//	OPENAI_API_KEY=sk-... go run ./examples/go-client -conv demo "My name is Ada." "What is my name?"
//
// OPENAI_API_KEY is the key Recall sees: your OpenAI key when Recall runs
// without tenant files (it passes the key through), a tenant's key
// otherwise. Against a fake upstream such as bench/fakeupstream any
// non-empty value works. When the API answers an error, go-client prints
// its status and body (the SDK's error string has only the status).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv("OPENAI_API_KEY"), os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, key string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("go-client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8080/v1", "Recall's base URL")
	conv := fs.String("conv", "go-client-demo", "conversation id")
	model := fs.String("model", "gpt-4o-mini", "model")
	stream := fs.Bool("stream", false, "stream the answers")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: OPENAI_API_KEY=... go-client [flags] message...\n\n"+
			"OPENAI_API_KEY is the key Recall sees: your OpenAI key without tenant files,\n"+
			"a tenant's key with them, any value against bench/fakeupstream.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if key == "" {
		fmt.Fprintln(stderr, "go-client: OPENAI_API_KEY is not set: set it to your OpenAI key (Recall passes it\n"+
			"through), to a tenant's key if Recall has tenant files, or to any value against\n"+
			"a fake upstream such as bench/fakeupstream")
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}

	client := openai.NewClient(
		option.WithBaseURL(*url),
		option.WithAPIKey(key),
		option.WithHeader("X-Conversation-ID", *conv),
	)
	ctx := context.Background()
	for _, text := range fs.Args() {
		params := openai.ChatCompletionNewParams{
			Model:    *model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
		}
		fmt.Fprintf(stdout, "> %s\n", text)
		if *stream {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			for s.Next() {
				if c := s.Current(); len(c.Choices) > 0 {
					fmt.Fprint(stdout, c.Choices[0].Delta.Content)
				}
			}
			fmt.Fprintln(stdout)
			if err := s.Err(); err != nil {
				printError(stderr, err)
				return 1
			}
			continue
		}
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			printError(stderr, err)
			return 1
		}
		fmt.Fprintln(stdout, resp.Choices[0].Message.Content)
	}
	return 0
}

// printError writes err, with the body of an API error: the SDK's
// *openai.Error prints only its status, and the body says what is wrong
// ("You didn't provide an API key", "context_length_exceeded", ...).
func printError(w io.Writer, err error) {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		fmt.Fprintf(w, "go-client: %v\n%s\n", apiErr, apiErr.RawJSON())
		return
	}
	fmt.Fprintf(w, "go-client: %v\n", err)
}
