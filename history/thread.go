package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ThreadSep joins a conversation's id and one of its threads' names into
// the thread's id (DESIGN.md section 15): "proj~agent-1". A subagent's
// thread is a conversation of its own, stored, curated, summarised and
// forgotten as any, whose id names its parent; no client-chosen id holds
// the separator, so no thread's id is another conversation's.
const ThreadSep = "~"

// maxThreadName bounds a thread's name in its id.
const maxThreadName = 64

// ThreadID returns the id of conversation conv's thread named name.
func ThreadID(conv, name string) string { return conv + ThreadSep + name }

// SplitThread returns the conversation and the thread's name a thread's
// id joins; ok is false for a conversation's own id.
func SplitThread(id string) (conv, name string, ok bool) {
	return strings.Cut(id, ThreadSep)
}

// ValidThreadName reports whether name may name a thread: 1-64
// characters of a conversation id's.
func ValidThreadName(name string) bool {
	return len(name) <= maxThreadName && ValidID(name)
}

// ValidStoredID reports whether id names a conversation (ValidID) or one
// of its threads (ThreadID of a valid id and a valid name).
func ValidStoredID(id string) bool {
	if conv, name, ok := SplitThread(id); ok {
		return ValidID(conv) && ValidThreadName(name)
	}
	return ValidID(id)
}

// ThreadLister is implemented by stores that can list a conversation's
// threads: the conversation API lists them, and a delete erases them with
// their conversation.
type ThreadLister interface {
	// Threads returns the ids of the stored threads of k's conversation
	// (ThreadID of it), sorted.
	Threads(ctx context.Context, k Key) ([]string, error)
}

var _ ThreadLister = (*Cache)(nil)

// Threads lists through to the store (errors.ErrUnsupported if it cannot).
func (c *Cache) Threads(ctx context.Context, k Key) ([]string, error) {
	tl, ok := c.store.(ThreadLister)
	if !ok {
		return nil, fmt.Errorf("history: list threads: %w", errors.ErrUnsupported)
	}
	return tl.Threads(ctx, k)
}
