package pipeline

// The codecs every test here reads messages through (wire.For): each
// protocol package registers its own when it is imported.
import (
	_ "github.com/recallproxy/recall/protocol/chat"
	_ "github.com/recallproxy/recall/protocol/gemini"
	_ "github.com/recallproxy/recall/protocol/messages"
	_ "github.com/recallproxy/recall/protocol/responses"
)
