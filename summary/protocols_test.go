package summary

// The summariser's request goes through the upstream protocol's package
// (wire.UpstreamOf): the tests link Recall's, as cmd/recall does.
import (
	_ "github.com/recallproxy/recall/protocol/gemini"
	_ "github.com/recallproxy/recall/protocol/messages"
)
