package badgerstore

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/recallproxy/recall/history"
)

// The key layout is described once, in the package comment: every key a
// store holds after commits, a summary, a fold and a forget is of a kind
// listed there, and every kind listed there but pending work (which a
// finished operation leaves none of) is one the store writes.
func TestKeyLayoutComment(t *testing.T) {
	src, err := os.ReadFile("store.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src[:bytes.Index(src, []byte("\npackage "))])
	documented := map[string]bool{}
	line := regexp.MustCompile(`(?m)^//\t([a-z]) \\x00 (.*)$`)
	for _, m := range line.FindAllStringSubmatch(doc, -1) {
		documented[layoutKind(m[1], m[2])] = true
	}
	if len(documented) == 0 {
		t.Fatal("no key layout found in the package comment")
	}

	s := openT(t, t.TempDir(), Options{})
	ctx := context.Background()
	k := history.Key{Tenant: "t", Conversation: "c"}
	m := commitT(t, s, k, history.Change{Append: []history.Message{textMsg("user", "walrus one"), textMsg("assistant", "walrus two"),
		textMsg("user", "walrus three"), textMsg("assistant", "walrus four")}})
	commitT(t, s, k, history.Change{Summary: &history.SummaryChange{Incarnation: m.Incarnation,
		Summary: history.Summary{Text: strings.Repeat("a long summary ", 200), Through: 2, Turns: 1}}})
	if err := s.AppendExchanges(ctx, k, []history.ExchangeRecord{{ID: history.NewExchangeID(1), Incarnation: m.Incarnation}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutCalibrations(ctx, "t", []history.Calibration{{Model: "gpt-4o", Ratio: 1.2, Samples: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Fold(); err != nil {
		t.Fatal(err)
	}
	var active []history.Message
	if err := s.Messages(ctx, k, 0, false, func(m history.Message) bool { active = append(active, m); return true }); err != nil {
		t.Fatal(err)
	}
	commitT(t, s, k, history.Change{Forget: history.PlanForget(active, []uint64{3, 4}, true)})

	seen := map[string]bool{}
	for _, db := range []*badger.DB{s.db, s.side} {
		listKinds(t, db, documented, seen)
	}
	for kind := range documented {
		if !seen[kind] && kind != "x" {
			t.Errorf("the package comment lists %q, which the store never wrote here", kind)
		}
	}
}

// listKinds marks the kind of every key in db in seen, and fails on one
// that documented does not list.
func listKinds(t *testing.T, db *badger.DB, documented, seen map[string]bool) {
	t.Helper()
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			key := it.Item().Key()
			kind := string(key[:1])
			switch kind {
			case "c": // the byte after the conversation id's NUL
				parts := bytes.SplitN(key, []byte{0}, 4)
				kind = "c " + string(parts[3][:1])
			case "v":
				kind = "v " + string(key[2:])
			}
			seen[kind] = true
			if !documented[kind] {
				t.Errorf("key %q is of kind %q, which the package comment does not list", key, kind)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// layoutKind names a documented key kind: its first byte, with the record
// letter of a conversation key or the name of a "v" key.
func layoutKind(first, rest string) string {
	switch first {
	case "c":
		if m := regexp.MustCompile(`\\x00 '([a-z])'`).FindStringSubmatch(rest); m != nil {
			return "c " + m[1]
		}
	case "v":
		if m := regexp.MustCompile(`^"([a-z]+)"`).FindStringSubmatch(rest); m != nil {
			return "v " + m[1]
		}
	}
	return first
}
