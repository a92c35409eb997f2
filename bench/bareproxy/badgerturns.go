package main

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/tidwall/gjson"
)

// badgerTurns keeps each answered turn in a Badger database of its own,
// durably by Badger's own means (SyncWrites: its writer fsyncs each batch
// of transactions before the next), in the fewest entries a
// conversation's store could have: the user's message and the answer's,
// each under the conversation and its position, and the conversation's
// head (its last position), in one transaction. No listing, search index
// or metadata beyond that. It is not a floor under Recall's store, which
// syncs Badger's logs itself (AIO, a group written while the last one
// syncs): it is what Badger's own durable mode costs.
type badgerTurns struct {
	db   *badger.DB
	mu   sync.Mutex
	last map[string]uint64 // each conversation's last position taken
}

// openBadgerTurns opens (creating) a database in dir.
func openBadgerTurns(dir string) (*badgerTurns, error) {
	db, err := badger.Open(badger.DefaultOptions(dir).WithSyncWrites(true).WithLogger(nil))
	if err != nil {
		return nil, err
	}
	return &badgerTurns{db: db, last: make(map[string]uint64)}, nil
}

// keep writes conv's turn, the client's last message and the answer's,
// and returns once it is durable.
func (b *badgerTurns) keep(conv string, client, answer []byte) error {
	b.mu.Lock()
	seq := b.last[conv] + 2
	b.last[conv] = seq
	b.mu.Unlock()
	user := []byte(gjson.GetBytes(client, "messages.@reverse.0").Raw)
	said := []byte(gjson.GetBytes(answer, "choices.0.message").Raw)
	if len(said) == 0 {
		said = []byte(streamedAnswer)
	}
	head := binary.BigEndian.AppendUint64(nil, seq)
	for {
		err := b.db.Update(func(txn *badger.Txn) error {
			if err := txn.Set(messageKey(conv, seq-1), user); err != nil {
				return err
			}
			if err := txn.Set(messageKey(conv, seq), said); err != nil {
				return err
			}
			return txn.Set(append([]byte{'h'}, conv...), head)
		})
		if !errors.Is(err, badger.ErrConflict) {
			return err
		}
	}
}

// messageKey is the key of conv's message at seq: 'm', the conversation,
// a zero byte and seq, big-endian.
func messageKey(conv string, seq uint64) []byte {
	k := append(append([]byte{'m'}, conv...), 0)
	return binary.BigEndian.AppendUint64(k, seq)
}
