package main

import (
	"context"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/recallproxy/recall/history"
	_ "github.com/recallproxy/recall/protocol/chat" // its codec, for the stored messages
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/wire"
)

// storeTurns keeps each answered turn in Recall's own embedded store,
// durably (AIO fsync, as Recall's default), as a proxy that kept its
// conversations in that store and did nothing else would: the user's
// message and the answer's, appended to the conversation named by
// X-Conversation-ID in one commit, as Recall's commit after an answer
// does. Between it and recall-sync lies what Recall's work costs beyond
// forwarding and its store's commit; between it and the -durable row,
// what the store costs beyond an appended, fsynced file.
type storeTurns struct {
	s     *badgerstore.Store
	mu    sync.Mutex
	convs map[string]*convTurns
}

// convTurns is one conversation's commits, one at a time, each from the
// metadata the last one left.
type convTurns struct {
	mu   sync.Mutex
	meta *history.Meta // nil: not read yet
}

// openStoreTurns opens (creating) a store in dir.
func openStoreTurns(dir string) (*storeTurns, error) {
	s, err := badgerstore.Open(dir, badgerstore.Options{AIOSync: true})
	if err != nil {
		return nil, err
	}
	return &storeTurns{s: s, convs: make(map[string]*convTurns)}, nil
}

// keep commits conv's turn, the client's last message and the answer's,
// and returns once it is durable.
func (t *storeTurns) keep(conv string, client, answer []byte) error {
	t.mu.Lock()
	c := t.convs[conv]
	if c == nil {
		c = &convTurns{}
		t.convs[conv] = c
	}
	t.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx := context.Background()
	k := history.Key{Tenant: "default", Conversation: conv}
	if c.meta == nil {
		snap, err := t.s.Load(ctx, k, history.Query{})
		if err != nil {
			return err
		}
		c.meta = &snap.Meta
	}
	user := gjson.GetBytes(client, "messages.@reverse.0").Raw
	said := gjson.GetBytes(answer, "choices.0.message").Raw
	if said == "" {
		said = streamedAnswer // a stream: its assembly is Recall's work, not the floor's
	}
	m, err := t.s.Commit(ctx, k, history.Change{
		Version: c.meta.Version,
		Base:    c.meta,
		Append: []history.Message{
			{Role: wire.RoleUser, Protocol: wire.ChatCompletions, Raw: []byte(user), Tokens: len(user) / 4},
			{Role: wire.RoleAssistant, Protocol: wire.ChatCompletions, Raw: []byte(said), Tokens: len(said) / 4},
		},
		Now: time.Now().UnixNano(),
	})
	if err != nil {
		c.meta = nil
		return err
	}
	c.meta = &m
	return nil
}

// streamedAnswer is the message a streamed answer is kept as.
const streamedAnswer = `{"role":"assistant","content":"A streamed answer."}`
