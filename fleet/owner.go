package fleet

import "github.com/cespare/xxhash/v2"

// view is the live members as one heartbeat read them: immutable once
// stored, so that Owner reads it without a lock.
type view struct {
	members []member // ordered by id
}

// member is a live member with what Owner needs of it ready: the seed
// of its weights, the hash of its id, and whether it is this replica.
type member struct {
	Member
	seed uint64
	self bool
}

func newView(members []Member, self string) *view {
	v := &view{members: make([]member, len(members))}
	for i, m := range members {
		v.members[i] = member{Member: m, seed: xxhash.Sum64String(m.ID), self: m.ID == self}
	}
	return v
}

// same reports whether v holds exactly members, in order.
func (v *view) same(members []Member) bool {
	if len(v.members) != len(members) {
		return false
	}
	for i, m := range members {
		if v.members[i].Member != m {
			return false
		}
	}
	return true
}

// Owner returns the base URL of the live member that owns key, and
// whether that member is this replica. A key is a conversation's store
// key (tenant, a zero byte, conversation). The owner is the member whose
// weight for the key is highest, a member's weight being the key's
// xxhash seeded with the hash of the member's id: every replica that
// sees the same members names the same owner for a key, and the keys
// spread evenly over them. While no member is known (never, once Join
// returned: this replica is always among them) it names this replica.
// Owner does not allocate, and it does not keep key.
func (f *Fleet) Owner(key string) (url string, self bool) {
	v := f.view.Load()
	best, top := -1, uint64(0)
	for i := range v.members {
		if w := v.members[i].weight(key); best < 0 || w > top {
			best, top = i, w
		}
	}
	if best < 0 {
		return f.self.URL, true
	}
	m := &v.members[best]
	return m.URL, m.self
}

// weight is m's weight for key: the highest weight owns it.
func (m *member) weight(key string) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(m.seed)
	_, _ = d.WriteString(key)
	return d.Sum64()
}
