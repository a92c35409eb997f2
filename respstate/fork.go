package respstate

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/recallproxy/recall/history"
)

// Fork copies r's conversation up to and including r's turn into a new
// conversation, whose id it returns: a request naming an older response
// than the latest continues there, and the original, untouched, is still
// continued by its own latest response. The copy is the active messages,
// as stored, in one commit; the original's summary is not copied (the
// fork's own compaction makes one when its history calls for it). If the
// request then fails, the fork stays, holding the history up to r.
func (st *State) Fork(ctx context.Context, ns string, r *Response) (string, error) {
	var copies []history.Message
	err := st.cfg.Store.Messages(ctx, r.key, 0, false, func(m history.Message) bool {
		if m.Seq > r.end {
			return false
		}
		copies = append(copies, history.Message{Role: m.Role, Protocol: m.Protocol, Raw: bytes.Clone(m.Raw),
			Hash: m.Hash, Tokens: m.Tokens, Flags: m.Flags & history.Recorded})
		return true
	})
	if err != nil {
		return "", StoreReadErr(err)
	}
	id := forkID(ForkRoot(r.Ref.Conversation))
	if _, err := st.cfg.Store.Commit(ctx, history.Key{Tenant: ns, Conversation: id},
		history.Change{Append: copies, Now: st.cfg.Now().UnixNano()}); err != nil {
		return "", StoreWriteErr(fmt.Errorf("respstate: fork %s: %w", r.Ref.Conversation, err))
	}
	return id, nil
}

// forkSep joins a conversation's name and a fork's own part in the
// fork's id: <name>:fork-<16 hex digits>.
const forkSep = ":fork-"

// NewForkID is the id of a new, empty fork of the conversation id, named
// after the name id was forked under (see forkID): a request that is no
// turn of its named conversation but is stored as a response of its own
// (package proxy's ownFork).
func NewForkID(id string) string { return forkID(ForkRoot(id)) }

// forkID is the id of a new fork of the conversation named root: a fork
// stays addressable by the name it was made under (see ForkRoot), and
// by its own id. A name too long to carry the suffix within
// history.ValidID's 128 characters forks into a conv_ id of Recall's,
// addressable by that id alone.
func forkID(root string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := root + forkSep + hex.EncodeToString(b[:])
	if !history.ValidID(id) {
		return NewConversationID()
	}
	return id
}

// ForkRoot returns the name conversation id was forked under, or id
// itself when it is not a fork's: a request naming the root (header,
// path prefix or body) may chain by a response of any fork of it, and
// continues that fork.
func ForkRoot(id string) string {
	i := strings.LastIndex(id, forkSep)
	if i <= 0 {
		return id
	}
	root, suffix := id[:i], id[i+len(forkSep):]
	if len(suffix) != 16 {
		return id
	}
	if _, err := hex.DecodeString(suffix); err != nil || strings.ToLower(suffix) != suffix {
		return id
	}
	return root
}
