// Package history is Recall's conversation model: stored messages and
// turns, the merge of what a client sent with what is stored, the curation
// strategies that decide what is sent upstream, and the Store interface
// that keeps conversations.
//
// A conversation is an append-only sequence of messages, each with a
// sequence number and the turn it belongs to. A turn is a user message and
// everything after it up to the next user message. Messages are never
// rewritten except to flag them (superseded by a client's edit, forgotten);
// the metadata record that describes them is updated in the same atomic
// write.
//
// The package imports nothing else from this module: callers hash and
// count messages (see package tokens and the protocol packages) and hand the
// results in.
package history
