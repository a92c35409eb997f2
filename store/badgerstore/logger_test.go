package badgerstore

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// formatted counts the times it was formatted into a line.
type formatted struct{ n *int }

func (f formatted) String() string { *f.n++; return "batch" }

// Badger's chatter is formatted only for a logger that keeps it: its
// writer logs at debug level for every batch, and a dropped line must
// not cost a fmt.Sprintf on the write path.
func TestBadgerChatterIsFormattedOnlyWhenKept(t *testing.T) {
	var out bytes.Buffer
	n := 0
	a := slogAdapter{slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	a.Debugf("writing %v", formatted{&n})
	a.Infof("writing %v", formatted{&n}) // Badger's info is Recall's debug
	if n != 0 || out.Len() != 0 {
		t.Fatalf("dropped lines formatted %d times, wrote %q; want none", n, out.String())
	}
	a.Warningf("slow %v", formatted{&n})
	if n != 1 || !strings.Contains(out.String(), "slow batch") || !strings.Contains(out.String(), "component=badger") {
		t.Fatalf("kept line formatted %d times, wrote %q; want once, with its component", n, out.String())
	}
	slogAdapter{}.Errorf("no logger %v", formatted{&n})
	if n != 1 {
		t.Fatalf("a nil logger formatted its line")
	}
}
