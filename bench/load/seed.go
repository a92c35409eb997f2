package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/recallproxy/recall/auth"
	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/plan"
	_ "github.com/recallproxy/recall/protocol/chat" // the codecs seeded turns are hashed with
	_ "github.com/recallproxy/recall/protocol/gemini"
	_ "github.com/recallproxy/recall/protocol/messages"
	_ "github.com/recallproxy/recall/protocol/responses"
	"github.com/recallproxy/recall/store/badgerstore"
	"github.com/recallproxy/recall/store/pgstore"
	"github.com/recallproxy/recall/tokens"
	"github.com/recallproxy/recall/wire"
)

// seedTurnsPerCommit bounds one seeding transaction well below Badger's
// transaction size limit.
const seedTurnsPerCommit = 250

// passThroughNamespace is the namespace Recall's implicit "default" tenant
// files a bearer key's conversations under.
func passThroughNamespace(key string) string { return auth.Namespace("default", key) }

// seed writes o.prefill turns (a user message and an assistant answer) into
// each of o.conversations conversations of a stopped Recall's data dir (or
// of a PostgreSQL database, with -seed-url),
// through the same history.Apply path Recall commits with.
func seed(o options) error {
	start := time.Now()
	var store history.Store
	var bs *badgerstore.Store
	var err error
	where := o.seedDir
	if o.seedURL != "" {
		ps, err := pgstore.Open(context.Background(), o.seedURL, pgstore.Options{MaxConns: 4})
		if err != nil {
			return err
		}
		defer ps.Close()
		store, where = ps, "PostgreSQL"
	} else {
		if bs, err = badgerstore.Open(o.seedDir, badgerstore.Options{NoSync: true}); err != nil {
			return err
		}
		store = bs
	}
	ns := o.namespace
	if ns == "" {
		ns = passThroughNamespace(o.key)
	}
	p, err := protocolNamed(o.protocol)
	if err != nil {
		return err
	}
	pool := newMessagePool(p.wire, o.model, o.words)
	convs := make(chan int)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for c := range convs {
				if err := seedConversation(store, history.Key{Tenant: ns, Conversation: o.convPrefix + strconv.Itoa(c)}, c, o, pool); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var seedErr error
feed:
	for c := range o.conversations {
		select {
		case convs <- c:
		case seedErr = <-errs:
			break feed
		}
	}
	close(convs)
	wg.Wait()
	if seedErr == nil && len(errs) > 0 {
		seedErr = <-errs
	}
	// Leave the store as a long-running Recall would have it: compacted,
	// rather than with a pile of level-0 tables that the server under test
	// would spend its first seconds compacting.
	if bs != nil {
		if seedErr == nil {
			seedErr = bs.DB().Flatten(1)
		}
		if err := bs.Close(); err != nil && seedErr == nil {
			seedErr = err
		}
	}
	if seedErr != nil {
		return fmt.Errorf("seed: %w", seedErr)
	}
	fmt.Fprintf(os.Stderr, "load: seeded %d conversations × %d turns into %s in %s\n",
		o.conversations, o.prefill, where, time.Since(start).Round(time.Millisecond))
	return nil
}

func seedConversation(store history.Store, k history.Key, c int, o options, pool *messagePool) error {
	ctx := context.Background()
	snap, err := store.Load(ctx, k, history.Query{})
	if err != nil {
		return err
	}
	version := snap.Meta.Version
	have := snap.Meta.Turns
	for have < o.prefill {
		n := min(seedTurnsPerCommit, o.prefill-have)
		ch := history.Change{
			Version: version,
			Append:  make([]history.Message, 0, 2*n),
			Model:   o.model,
			Now:     time.Now().UnixNano(),
		}
		for t := range n {
			u, a := pool.turn(have + t)
			ch.Append = append(ch.Append, u, a)
		}
		m, err := store.Commit(ctx, k, ch)
		if err != nil {
			return err
		}
		version, have = m.Version, m.Turns
	}
	if o.summarized {
		return seedSummary(ctx, store, k, c, o, pool)
	}
	return nil
}

// Recall's summary defaults (config: summary.trigger_turns, keep_turns,
// max_tokens).
const (
	summaryTrigger   = 10
	summaryKeep      = 3
	summaryMaxTokens = 1000
)

// seedSummary leaves k, the c-th conversation, as a long-running Recall
// with default summaries would: once more than summaryTrigger turns are
// stored, a summary covering all but the newest summaryKeep to
// summaryTrigger of them (c picks where in that cycle the conversation
// is: in a steady state conversations do not compact in step), its text
// what the fake upstream's summariser answers (the covered user messages,
// joined, cut at summaryMaxTokens). Without it every seeded conversation
// would be compacted on its first request, and the rows would measure
// that catch-up, not the steady state.
func seedSummary(ctx context.Context, store history.Store, k history.Key, c int, o options, pool *messagePool) error {
	covered := o.prefill - summaryKeep - c%(summaryTrigger-summaryKeep+1)
	if o.prefill <= summaryTrigger || covered <= 0 {
		return nil
	}
	snap, err := store.Load(ctx, k, history.Query{})
	if err != nil || snap.Meta.Summary != nil {
		return err
	}
	var text []byte
	tokens := 0
	for t := range covered {
		u, _ := pool.turn(t)
		if tokens+u.Tokens > summaryMaxTokens {
			break
		}
		var msg struct{ Content string }
		if err := json.Unmarshal(u.Raw, &msg); err != nil {
			return err
		}
		if len(text) > 0 {
			text = append(text, "; "...)
		}
		text = append(text, msg.Content...)
		tokens += u.Tokens
	}
	_, err = store.Commit(ctx, k, history.Change{Summary: &history.SummaryChange{
		Incarnation: snap.Meta.Incarnation, Epoch: snap.Meta.Epoch,
		Summary: history.Summary{Text: string(text), Through: uint64(2 * covered), Turns: covered, Tokens: tokens, Model: o.model, At: time.Now().UnixNano()},
	}})
	return err
}

// messagePool holds pre-built messages (JSON, hash, tokens counted once)
// that seeded turns reuse, so that seeding 10⁵ turns costs no tokenizer
// time. Their JSON, {"role","content"} with string content, is valid in
// every protocol; they are stored as proto's, hashed by its codec, as
// Recall stores what a client of that protocol sent.
type messagePool struct {
	users, answers []history.Message
}

func newMessagePool(proto wire.Protocol, model string, words int) *messagePool {
	const size = 64
	var counter tokens.Counter
	enc := tokens.ForModel(model)
	msg := func(role, text string) history.Message {
		raw, _ := json.Marshal(map[string]string{"role": role, "content": text})
		if proto == wire.Gemini {
			// A Gemini Content: parts, and "model" for the assistant.
			gr := role
			if role == wire.RoleAssistant {
				gr = "model"
			}
			raw, _ = json.Marshal(map[string]any{"role": gr, "parts": []map[string]string{{"text": text}}})
		}
		return history.Message{Role: role, Protocol: proto, Raw: raw, Hash: wire.For(proto).Hash(raw), Tokens: plan.Count(&counter, enc, proto, raw)}
	}
	p := &messagePool{}
	for i := range size {
		q := string(appendWords(nil, uint64(i), words))
		p.users = append(p.users, msg(wire.RoleUser, "Question "+strconv.Itoa(i)+": "+q))
		// An answer about three times the question, as chat answers go.
		a := appendWords(nil, uint64(i)+1000, words)
		a = append(a, ' ')
		a = appendWords(a, uint64(i)+2000, words)
		a = append(a, ' ')
		a = appendWords(a, uint64(i)+3000, words)
		p.answers = append(p.answers, msg(wire.RoleAssistant, string(a)))
	}
	return p
}

// turn returns the user message and answer of turn t.
func (p *messagePool) turn(t int) (history.Message, history.Message) {
	return p.users[t%len(p.users)], p.answers[(t*7)%len(p.answers)]
}

// vocabulary is the word list message text is drawn from: ordinary English
// and code words, so that token counts look like real chat text (about 1.3
// tokens a word).
var vocabulary = []string{
	"the", "request", "returns", "a", "list", "of", "items", "when", "cache", "is", "empty",
	"please", "explain", "why", "function", "error", "handler", "database", "connection", "timeout",
	"should", "we", "retry", "after", "failure", "config", "file", "contains", "value", "for",
	"server", "client", "response", "latency", "throughput", "memory", "usage", "grows", "slowly",
	"under", "load", "test", "passes", "locally", "but", "fails", "in", "CI", "pipeline", "because",
	"environment", "variable", "missing", "deploy", "version", "rollback", "migration", "schema",
	"index", "query", "plan", "takes", "seconds", "instead", "milliseconds", "user", "account",
	"permission", "denied", "token", "expired", "refresh", "login", "page", "button", "click",
	"JSON", "parse", "field", "null", "string", "number", "array", "object", "nested", "struct",
}

// appendWords appends n words chosen deterministically from seed.
func appendWords(b []byte, seed uint64, n int) []byte {
	x := seed*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	for i := range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, vocabulary[x%uint64(len(vocabulary))]...)
	}
	return b
}
