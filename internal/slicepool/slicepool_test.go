package slicepool

import "testing"

// Put empties the whole array, not only its length, and a later Get for
// no more than it holds returns it (sync.Pool may drop what it is given,
// at random under the race detector: a few tries).
func TestPutEmptiesAndGetReuses(t *testing.T) {
	p := Pool[*int]{Max: 64}
	reused := false
	for range 100 {
		box := p.Get(10)
		if cap(*box) < 10 || len(*box) != 0 {
			t.Fatalf("Get(10): len %d, cap %d", len(*box), cap(*box))
		}
		v := 1
		*box = append(*box, &v, &v, &v)
		all := (*box)[:cap(*box)]
		all[len(all)-1] = &v // past the length
		p.Put(box)
		for i, e := range all {
			if e != nil {
				t.Fatalf("after Put: entry %d still set", i)
			}
		}
		again := p.Get(8)
		if reused = cap(*again) > 0 && &(*again)[:1][0] == &all[0]; reused {
			break
		}
	}
	if !reused {
		t.Error("no Get reused a released array in 100 tries")
	}
}

// A new array has a quarter more room than asked; one past Max is not
// kept.
func TestRoomAndBound(t *testing.T) {
	p := Pool[int]{Max: 16}
	if box := p.Get(40); cap(*box) != 50 {
		t.Errorf("Get(40): cap %d, want 50", cap(*box))
	}
	big := p.Get(40)
	p.Put(big)
	if *big != nil {
		t.Errorf("an array of %d entries past Max 16 was kept", cap(*big))
	}
	p.Put(nil)
}
