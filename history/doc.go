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
// Of this module the package imports only wire, whose Codec reads a
// message's calls, results and text for it (history parses no protocol's
// JSON), and links protocol/chat for the codec of records stored before
// messages carried their protocol. Callers hash and count messages (see
// package tokens and the protocol packages) and hand the results in.
package history
