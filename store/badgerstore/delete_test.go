package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
	"github.com/recallproxy/recall/store/storetest"
)

// keysOf returns every key of the database that belongs to conversation k:
// metadata, records, listing entry, postings and pending mark.
func keysOf(t *testing.T, s *Store, k history.Key) []string {
	t.Helper()
	var out []string
	for _, db := range []*badger.DB{s.db, s.side} {
		out = append(out, keysIn(t, db, k)...)
	}
	return out
}

// keysIn returns the keys of db that belong to conversation k.
func keysIn(t *testing.T, db *badger.DB, k history.Key) []string {
	t.Helper()
	var out []string
	err := db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		conv := []byte(k.Conversation)
		for it.Rewind(); it.Valid(); it.Next() {
			key := it.Item().Key()
			var mine bool
			switch key[0] {
			case 'c':
				mine = bytes.HasPrefix(key, convPrefix(k))
			case 'l':
				p := listPrefix(k.Tenant)
				mine = bytes.HasPrefix(key, p) && bytes.Equal(key[len(p)+8:], conv)
			case 'i':
				if bytes.HasPrefix(key, []byte("i\x00"+k.Tenant+"\x00")) {
					v, err := it.Item().ValueCopy(nil)
					if err != nil {
						return err
					}
					err = eachNamedGroup(txn, k.Tenant, key, v, func(id string, _ segBase, _ segGroup) {
						mine = mine || id == k.Conversation
					})
					if err != nil {
						return err
					}
				}
			case 'g':
				if bytes.HasPrefix(key, []byte("g\x00"+k.Tenant+"\x00")) {
					table, err := readSegTable(txn, nil, k.Tenant, binary.BigEndian.Uint64(key[len(key)-8:]))
					if err != nil {
						return err
					}
					mine = slices.ContainsFunc(table, func(e segEntry) bool { return string(e.conv) == k.Conversation })
				}
			case 'f':
				mine = bytes.HasPrefix(key, segConvPrefix(k))
			case 'x':
				mine = bytes.Equal(key, pendingKey(k))
			case 'w':
				mine = bytes.Equal(key, totalsKey(k))
			case 'v': // the store's own
			default:
				return fmt.Errorf("unknown key %q", key)
			}
			if mine {
				out = append(out, string(key))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ownStore opens a store in a fresh directory with conversation t/c
// holding msgs. No cleanup closes it: the test does, to reopen dir or to
// cut a Delete short.
func ownStore(t *testing.T, msgs ...history.Message) (s *Store, dir string, k history.Key, m history.Meta) {
	t.Helper()
	dir = t.TempDir()
	s = mustOpen(t, dir, Options{})
	k = history.Key{Tenant: "t", Conversation: "c"}
	return s, dir, k, commitT(t, s, k, history.Change{Append: msgs})
}

// openT opens a store in dir that a cleanup closes.
func openT(t *testing.T, dir string, o Options) *Store {
	t.Helper()
	s := mustOpen(t, dir, o)
	t.Cleanup(func() { s.Close() })
	return s
}

// mustOpen opens the store in dir for a test that closes it itself.
func mustOpen(t *testing.T, dir string, o Options) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// commitT is storetest.MustCommit: c on top of the conversation's
// current version.
func commitT(t *testing.T, s *Store, k history.Key, c history.Change) history.Meta {
	t.Helper()
	return storetest.MustCommit(t, s, k, c)
}

func textMsg(role, text string) history.Message {
	return history.Message{Role: role, Raw: []byte(`{"role":"` + role + `","content":"` + text + `"}`), Tokens: 1}
}

// Delete leaves no key of the conversation behind (metadata, records,
// listing entry, postings, mark), and no other conversation loses one:
// checked by scanning Badger itself.
func TestDeleteLeavesNoKey(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", !noSync), func(t *testing.T) {
			s := openT(t, t.TempDir(), Options{NoSync: noSync})
			ctx := context.Background()
			k := history.Key{Tenant: "t", Conversation: "a"}
			neighbours := []history.Key{{Tenant: "t", Conversation: "a.b"}, {Tenant: "t", Conversation: "ab"}, {Tenant: "u", Conversation: "a"}}
			for _, key := range append([]history.Key{k}, neighbours...) {
				commitT(t, s, key, history.Change{Append: []history.Message{textMsg("user", "shared words here"), textMsg("assistant", "more shared words")}})
			}
			commitT(t, s, k, history.Change{Supersede: &history.Boundary{Seq: 1, Turn: 1}, Append: []history.Message{textMsg("assistant", "replaced")}})
			active := storedMessages(t, s, k, false)
			commitT(t, s, k, history.Change{Forget: history.PlanForget(active, []uint64{3}, true), Append: nil})
			before := map[history.Key]int{}
			for _, key := range neighbours {
				before[key] = len(keysOf(t, s, key))
			}
			if len(keysOf(t, s, k)) == 0 {
				t.Fatal("no keys before the delete")
			}
			if err := s.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
			if got := keysOf(t, s, k); len(got) != 0 {
				t.Errorf("got keys left after delete: %q", got)
			}
			for _, key := range neighbours {
				if got := len(keysOf(t, s, key)); got != before[key] || got == 0 {
					t.Errorf("%s: got %d keys after deleting its neighbour, want %d", key, got, before[key])
				}
			}
		})
	}
}

func storedMessages(t *testing.T, s *Store, k history.Key, all bool) []history.Message {
	t.Helper()
	var out []history.Message
	if err := s.Messages(context.Background(), k, 0, all, func(m history.Message) bool { out = append(out, m); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

// A delete interrupted after its first transaction (a crash) shows the
// conversation gone, refuses commits on the id, and is finished by the
// next Open.
func TestDeleteFinishedAtOpen(t *testing.T) {
	s, dir, k, m := ownStore(t, textMsg("user", "remember the walrus"), textMsg("assistant", "noted"))
	ctx := context.Background()
	// The first transaction of a Delete, and then the crash.
	if err := s.db.Update(func(txn *badger.Txn) error { return deleteMeta(txn, k, &m) }); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Load(ctx, k, history.Query{MinMessages: 10})
	if err != nil || snap.Meta.Version != 0 || len(snap.Tail) != 0 {
		t.Errorf("half deleted: Load got %+v, %v; want nothing", snap, err)
	}
	if got := storedMessages(t, s, k, true); len(got) != 0 {
		t.Errorf("half deleted: Messages got %d, want none", len(got))
	}
	if hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "walrus", Limit: 5}); err != nil || len(hits) != 0 {
		t.Errorf("half deleted: Search got %v, %v; want nothing", hits, err)
	}
	if page, _, err := s.List(ctx, "t", history.ListQuery{Limit: 5}); err != nil || len(page) != 0 {
		t.Errorf("half deleted: List got %v, %v; want nothing", page, err)
	}
	if _, err := s.Commit(ctx, k, history.Change{Append: []history.Message{textMsg("user", "new")}, Now: 9}); !errors.Is(err, history.ErrConflict) {
		t.Errorf("half deleted: a commit on the id got %v, want ErrConflict", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{})
	if got := keysOf(t, s, k); len(got) != 0 {
		t.Errorf("after reopening: got keys %q, want none", got)
	}
	m = commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "new")}})
	if m.Version != 1 || m.NextSeq != 2 {
		t.Errorf("after reopening: got %+v, want a fresh conversation", m)
	}
}

// Records a staged commit left past NextSeq (it crashed before its
// metadata landed) are never found, block commits on the conversation
// until Open clears them, and are gone after it with their postings.
func TestStagedLeftoversClearedAtOpen(t *testing.T) {
	s, dir, k, m := ownStore(t, textMsg("user", "landed"))
	ctx := context.Background()
	// What commitStaged does before landing: the mark, then records.
	var b segBuilder
	err := s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(pendingKey(k), pending{kind: pendingStaged, ranges: []history.Range{{From: m.NextSeq, To: maxSeq}}}.append(nil)); err != nil {
			return err
		}
		for i := range 3 {
			msg := textMsg("user", "ghost"+strconv.Itoa(i)+" landed")
			msg.Seq = m.NextSeq + uint64(i)
			if _, err := setRecord(txn, convPrefix(k), &msg, nil); err != nil {
				return err
			}
			b.add(k.Conversation, &msg) // postings no fold writes, as if one had
		}
		return nil
	})
	if err == nil {
		err = s.side.Update(func(txn *badger.Txn) error { return b.write(txn, k.Tenant, 1<<40) })
	}
	if err != nil {
		t.Fatal(err)
	}
	// The process the crash ended held the conversation in no cache: the
	// committer drops it when it sets a mark (groupMeta).
	s.metas.drop(convPrefix(k))
	if hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "ghost0 ghost1 ghost2 landed", Limit: 9}); err != nil || len(hits) != 1 || hits[0].Message.Seq != 1 {
		t.Errorf("staged: search got %v, %v; want only the landed message", hits, err)
	}
	if _, err := s.Commit(ctx, k, history.Change{Version: m.Version, Append: []history.Message{textMsg("user", "x")}, Now: 5}); !errors.Is(err, history.ErrConflict) {
		t.Errorf("staged: a commit got %v, want ErrConflict", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, dir, Options{})
	got := keysOf(t, s, k)
	if slices.ContainsFunc(got, func(key string) bool { return strings.Contains(key, "ghost") || key[0] == 'x' }) {
		t.Errorf("after reopening: got %q, want no ghost posting and no mark", got)
	}
	commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "next")}})
	if hits, err := s.Search(ctx, "t", history.SearchQuery{Text: "ghost1 next", Limit: 9}); err != nil || len(hits) != 1 || hits[0].Message.Seq != 2 {
		t.Errorf("after reopening: search got %v, %v; want the new seq 2 only", hits, err)
	}
}

// Relaxed mode commits different conversations in concurrent transactions:
// nothing they write is shared (no tenant-wide counter), so none
// conflicts.
func TestRelaxedCommitsOfATenantNeverConflict(t *testing.T) {
	s := openT(t, t.TempDir(), Options{NoSync: true})
	const n, rounds = 8, 20
	errs := make(chan error, n)
	for i := range n {
		go func() {
			k := history.Key{Tenant: "t", Conversation: "c" + strconv.Itoa(i)}
			var version uint64
			for r := range rounds {
				m, err := s.Commit(context.Background(), k, history.Change{Version: version,
					Append: []history.Message{textMsg("user", "round "+strconv.Itoa(r))}, Now: int64(r + 1)})
				if err != nil {
					errs <- err
					return
				}
				version = m.Version
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("got %v, want every commit to land", err)
		}
	}
	hits, err := s.Search(context.Background(), "t", history.SearchQuery{Text: "round", Limit: 1000})
	if err != nil || len(hits) != n*rounds {
		t.Errorf("got %d hits, %v; want %d", len(hits), err, n*rounds)
	}
}

// A delete abandoned half way (here: its first transaction only, as when
// the disk fills up during the rest) does not block the id forever: the
// next commit on it fails with ErrConflict having finished the delete,
// and its retry starts a fresh conversation.
func TestCommitFinishesAnAbandonedDelete(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "remember the walrus"), textMsg("assistant", "noted")}})
	if err := s.db.Update(func(txn *badger.Txn) error { return deleteMeta(txn, k, &m) }); err != nil {
		t.Fatal(err)
	}
	c := history.Change{Append: []history.Message{textMsg("user", "new")}, Now: 9}
	if _, err := s.Commit(ctx, k, c); !errors.Is(err, history.ErrConflict) {
		t.Fatalf("first commit: got %v, want ErrConflict", err)
	}
	if got := keysOf(t, s, k); len(got) != 0 {
		t.Errorf("after the first commit: got keys %q, want the delete finished", got)
	}
	m, err := s.Commit(ctx, k, c)
	if err != nil || m.Version != 1 || m.NextSeq != 2 {
		t.Errorf("retry: got %+v, %v; want a fresh conversation", m, err)
	}
}
