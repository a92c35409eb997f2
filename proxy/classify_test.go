package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/protocol/chat"
)

func TestClassify(t *testing.T) {
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	_, parseErr := url.Parse("http://upstream.test/v1/a%zz")
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"api error", apierr.Busy, 409, "conversation_busy"},
		{"wrapped api error", fmt.Errorf("%w: %w", apierr.CommitFailed, errors.New("badger: closed")), 500, "history_write_failed"},
		{"invalid body", &chat.Error{Message: "bad role", Param: "messages[0].role", Code: "invalid_value"}, 400, "invalid_value"},
		{"context length", fmt.Errorf("curate: %w", &history.ContextLengthError{Window: 8192, Messages: 9000}), 400, "context_length_exceeded"},
		{"upstream refused", upstreamErr(refused), 502, "upstream_unavailable"},
		{"upstream reset mid-body", upstreamErr(fmt.Errorf("proxy: read upstream answer: %w", io.ErrUnexpectedEOF)), 502, "upstream_unavailable"},
		{"upstream deadline", upstreamErr(&url.Error{Op: "Post", URL: "http://u", Err: context.DeadlineExceeded}), 504, "upstream_timeout"},
		{"upstream socket timeout", upstreamErr(fmt.Errorf("proxy: read upstream answer: %w", os.ErrDeadlineExceeded)), 504, "upstream_timeout"},
		{"upstream answered early", upstreamErr(errors.New("proxy: upstream answered before reading the request body")), 502, "upstream_unavailable"},
		{"tenant build failure", fmt.Errorf("proxy: tenant acme: %w", errors.New(`history: unknown strategy "x"`)), 500, "internal_error"},
		{"local url error", parseErr, 500, "internal_error"},
		{"local deadline", fmt.Errorf("history: load: %w", context.DeadlineExceeded), 500, "internal_error"},
		{"local net error", &net.OpError{Op: "read", Net: "unix", Err: os.ErrDeadlineExceeded}, 500, "internal_error"},
		{"anything else", errors.New("boom"), 500, "internal_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := classify(tt.err)
			if e.Status != tt.status || e.Code != tt.code {
				t.Errorf("got %d %s, want %d %s", e.Status, e.Code, tt.status, tt.code)
			}
			if e.Status >= 500 && strings.Contains(e.Message, tt.err.Error()) {
				t.Errorf("got message %q, want one that does not repeat the cause", e.Message)
			}
		})
	}
}

func TestUpstreamErrKeepsNil(t *testing.T) {
	if err := upstreamErr(nil); err != nil {
		t.Errorf("got %v, want nil", err)
	}
}
