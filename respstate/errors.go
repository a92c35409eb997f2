package respstate

import (
	"errors"
	"fmt"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/internal/apierr"
)

// StoreReadErr is a failed store read as the client is told it.
func StoreReadErr(err error) error {
	if errors.Is(err, history.ErrUnavailable) {
		return fmt.Errorf("%w: %w", apierr.StoreUnavailable, err)
	}
	return fmt.Errorf("%w: %w", apierr.StoreReadFailed, err)
}

// StoreWriteErr is a failed store write as the client is told it.
func StoreWriteErr(err error) error {
	switch {
	case errors.Is(err, history.ErrNoSpace):
		return fmt.Errorf("%w: %w", apierr.NoSpace, err)
	case errors.Is(err, history.ErrUnavailable):
		return fmt.Errorf("%w: %w", apierr.StoreUnavailable, err)
	case errors.Is(err, history.ErrConflict):
		return fmt.Errorf("%w: %w", apierr.Changed, err)
	}
	return fmt.Errorf("%w: %w", apierr.CommitFailed, err)
}
