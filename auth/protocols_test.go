package auth_test

// The headers a client's key may come in are the registered protocols'
// (wire.KeyHeaders): the tests link Recall's, as cmd/recall does.
import (
	_ "github.com/recallproxy/recall/protocol/gemini"
	_ "github.com/recallproxy/recall/protocol/messages"
)
