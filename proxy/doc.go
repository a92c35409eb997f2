// Package proxy is Recall's HTTP side: the fasthttp server, routing, tenant
// authentication, the upstream client, the streaming relay and the
// exchange of every protocol that wires package plan (what to send, what
// to record) to the protocol packages (how to read and rewrite bodies).
// The exchange's stages that need neither HTTP nor the server (decode's
// turn, the plan's lock and decision, encode, the event pump, the
// commit's write, the render to a Client or Writer) are package
// pipeline's; proxy calls them in order (pipeline.go) and fills what
// they need of the server (pipeline.Deps).
//
// Per chat-completions request with a conversation id: authenticate,
// validate, load the conversation's tail, merge, curate, forward with only
// "messages" replaced, relay the answer as it arrives, and commit the new
// messages with the answer as one atomic write once the answer is whole.
// Requests on one conversation are serialised; different conversations
// never wait on each other.
package proxy
