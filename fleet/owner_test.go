package fleet

import (
	"fmt"
	"testing"
)

// fleetOf is a Fleet whose view holds n members, this replica the first.
func fleetOf(n int) *Fleet {
	members := make([]Member, n)
	for i := range members {
		members[i] = Member{ID: fmt.Sprintf("host-%d/1234/0a1b2c3d4e5f", i), URL: fmt.Sprintf("http://10.0.0.%d:8080", i)}
	}
	f := &Fleet{self: members[0]}
	f.view.Store(newView(members, members[0].ID))
	return f
}

func key(i int) string { return fmt.Sprintf("acme\x00conversation-%d", i) }

// TestOwnerAloneOrUnknown: with no member known, or this replica alone,
// every key is this replica's.
func TestOwnerAloneOrUnknown(t *testing.T) {
	unknown := &Fleet{self: Member{ID: "me", URL: "http://me:8080"}}
	unknown.view.Store(&view{})
	for name, f := range map[string]*Fleet{"no member": unknown, "alone": fleetOf(1)} {
		for i := range 100 {
			if u, self := f.Owner(key(i)); !self || u != f.self.URL {
				t.Fatalf("%s: key %d: got %s, self %v; want this replica", name, i, u, self)
			}
		}
	}
}

// TestOwnerMovesOnlyWhatItMust: a member leaving moves only the keys it
// owned, and one joining takes about 1/N of the keys, from every other
// member, moving none between the others.
func TestOwnerMovesOnlyWhatItMust(t *testing.T) {
	const keys = 4000
	four, three := fleetOf(4), fleetOf(3) // three: the fourth member gone
	moved := 0
	for i := range keys {
		before, _ := four.Owner(key(i))
		after, _ := three.Owner(key(i))
		if before == after {
			continue
		}
		if before != "http://10.0.0.3:8080" {
			t.Fatalf("key %d moved from %s to %s, a member that stayed", i, before, after)
		}
		moved++
	}
	if moved < keys/4*8/10 || moved > keys/4*12/10 {
		t.Errorf("%d of %d keys moved when one of 4 members left, want about a quarter", moved, keys)
	}
}

// TestOwnerAllocatesNothing: Owner runs on every request with memory.
func TestOwnerAllocatesNothing(t *testing.T) {
	f := fleetOf(3)
	k := key(7)
	if n := testing.AllocsPerRun(1000, func() { f.Owner(k) }); n != 0 {
		t.Fatalf("Owner allocates %v times, want 0", n)
	}
}

func BenchmarkOwner(b *testing.B) {
	for _, n := range []int{2, 3, 8} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			f := fleetOf(n)
			k := "acme\x00" + "conv-0123456789abcdef0123456789abcdef"
			b.ReportAllocs()
			for b.Loop() {
				f.Owner(k)
			}
		})
	}
}
