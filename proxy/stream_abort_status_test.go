package proxy

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
	"github.com/recallproxy/recall/pipeline"
)

// A relayed stream that ends before its commit is recorded with the
// status its end deserves, whatever the upstream's was.
func TestAbortStatus(t *testing.T) {
	tests := []struct {
		name        string
		err, ctxErr error
		want        int
	}{
		{"client gone", fmt.Errorf("%w: broken pipe", pipeline.ErrClientGone), nil, 499},
		{"client gone past the deadline", fmt.Errorf("%w: broken pipe", pipeline.ErrClientGone), context.DeadlineExceeded, 499},
		{"commit timed out", fmt.Errorf("%w: %w", apierr.CommitFailed, context.DeadlineExceeded), nil, apierr.CommitFailed.Status},
		{"deadline in the error", fmt.Errorf("read: %w", context.DeadlineExceeded), nil, apierr.UpstreamTimeout.Status},
		{"the exchange's deadline", errors.New("read: interrupted"), context.DeadlineExceeded, apierr.UpstreamTimeout.Status},
		{"idle timeout's cancel is no deadline", errors.New("read: interrupted"), context.Canceled, apierr.Internal.Status},
		{"stream cut", fmt.Errorf("%w: unexpected EOF", apierr.UpstreamStreamCut), nil, apierr.UpstreamStreamCut.Status},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := abortStatus(tt.err, tt.ctxErr); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
