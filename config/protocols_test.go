package config

// The kinds of upstream.protocol are registered by the protocol packages
// (wire.RegisterUpstream): the tests link Recall's, as cmd/recall does.
import (
	_ "github.com/recallproxy/recall/protocol/chat"
	_ "github.com/recallproxy/recall/protocol/gemini"
	_ "github.com/recallproxy/recall/protocol/messages"
)
