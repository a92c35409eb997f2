package badgerstore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/recallproxy/recall/history"
)

// A message past valueThreshold lives in the value log: the tables a
// flush writes hold its key and a pointer, a small part of its bytes, and
// it loads back whole.
func TestValuesPastTheThresholdLiveInTheValueLog(t *testing.T) {
	dir := t.TempDir()
	k := history.Key{Tenant: "t", Conversation: "c"}
	s := mustOpen(t, dir, Options{NoSync: true})
	text := strings.Repeat("a sentence of about forty bytes, again. ", 8) // 320 bytes
	raw := 0
	for i := range 20 {
		var msgs []history.Message
		for j := range 50 {
			m := userMsg(strconv.Itoa(i*50+j) + " " + text)
			raw += len(m.Raw)
			msgs = append(msgs, m)
		}
		commitT(t, s, k, history.Change{Append: msgs})
	}
	if err := s.Close(); err != nil { // flushes the memtable to a table
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		t.Fatal(err)
	}
	var tables int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		tables += fi.Size()
	}
	if tables == 0 || tables > int64(raw)/4 {
		t.Fatalf("tables of %d bytes for %d bytes of messages: want under a quarter (the values in the value log)", tables, raw)
	}
	s = openT(t, dir, Options{NoSync: true})
	got := storedMessages(t, s, k, true)
	if len(got) != 1000 {
		t.Fatalf("loaded %d messages, want 1000", len(got))
	}
	for i, m := range got {
		if !strings.Contains(string(m.Raw), `"content":"`+strconv.Itoa(i)+" "+text) {
			t.Fatalf("message %d is %.60s..., want it whole", i, m.Raw)
		}
	}
}
