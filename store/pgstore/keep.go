package pgstore

import (
	"context"
	"sync"
	"time"

	"github.com/recallproxy/recall/history"
)

// A Store that shares the database keeps a conversation's lease after an
// exchange commits, instead of freeing its row in the commit (issue 50):
// while it keeps it, no other Store writes the conversation (every other
// Store's exchange takes the lease first, and its other writes wait for
// it: see below), so this Store is the conversation's only writer and its
// window cache serves the conversation without reading its head
// (history.KeptWriter), and the commit is the plain one. The next
// exchange on the conversation claims the kept lease in memory, without
// a round trip. A replica that serves all of a conversation's requests
// (a balancer's affinity, or replicas forwarding each request to the
// conversation's owner) then costs the database what a replica alone
// costs it: one statement an exchange.
//
// Another Store that wants the lease queues for it (takeSQL), which
// notifies wantChannel with the lease's name. The keeping Store listens
// (on its sole-writer lock's connection, see sole.go) and lets the lease
// go: at once if no exchange of its own holds it, else in that
// exchange's commit. It then does not keep that lease for keepAfterWant:
// replicas taking turns on a conversation with no affinity free it in
// their commits, as before, instead of trading it back and forth.
//
// A kept lease is renewed with every other kept lease of the Store in one
// statement a third of Options.Lease (keeper); one idle for keepIdle is
// let go there too, and so are they all at Close. The Store trusts its
// cache for the conversation only while the lease's last renewal (or
// take) is less than half of Options.Lease old: a Store that could not
// renew it for longer may have lost it.
const (
	// wantChannel is the LISTEN/NOTIFY channel on which a Store queueing
	// for a lease names it.
	wantChannel = "recall_lease_wanted"
	// keepAfterWant is how long a Store does not keep a lease another
	// Store wanted: long enough that replicas taking turns with no
	// affinity rarely trade a kept lease (once every 5 s a conversation),
	// short enough that a conversation contested while the replicas'
	// fleet was settling (forwarding) is kept again soon.
	keepAfterWant = 5 * time.Second
	// keepIdle is how long a kept lease outlives its last exchange.
	keepIdle = 30 * time.Second
	// keptEpoch marks the epochs of kept leases (SoleFor), so that none
	// is ever a sole-writer epoch (Sole).
	keptEpoch = 1 << 63
)

// keepRenewSQL renews the kept leases ($1 their names, $2 their
// holders) and returns the names it renewed, each with whether another
// Store ($4 this one) is queued for it (a notice missed while the
// lock's connection was away, or a Store that queues without
// notifying): a lease it did
// not renew was lost (it expired, and another Store may hold it now).
const keepRenewSQL = `UPDATE recall_leases l SET expires_at = clock_timestamp() + $3 * interval '1 microsecond'
FROM unnest($1::text[], $2::text[]) AS k(name, holder)
WHERE l.name = k.name AND l.holder = k.holder
RETURNING l.name, EXISTS (SELECT FROM recall_leases q
  WHERE q.name = 'next ' || l.name AND q.holder NOT IN ('', $4) AND q.expires_at > clock_timestamp()), ` + lazySQL

// keepFreeSQL frees the kept leases $1 held by $2 (one holder each).
const keepFreeSQL = `UPDATE recall_leases l ` + freeSQL + `
FROM unnest($1::text[], $2::text[]) AS k(name, holder)
WHERE l.name = k.name AND l.holder = k.holder
RETURNING ` + lazySQL

// keeping is what a kept lease adds to its heldLease (s.heldMu guards
// it).
type keeping struct {
	// busy: an exchange of this Store holds the lease now.
	busy bool
	// wanted: another Store asked for it while busy; the commit frees it.
	wanted bool
	// epoch is the cache's epoch while it is kept (SoleFor).
	epoch uint64
	// renewed is when the lease's row was last renewed (or taken), and
	// used when its last exchange ended.
	renewed, used time.Time
}

// keeper is a Store's side of kept leases.
type keeper struct {
	epochs    uint64               // numbers each keeping (s.heldMu)
	contested map[string]time.Time // lease names wanted, and when
	start     sync.Once
	closing   sync.Once
	running   bool // keep was started (set in start)
	stop      chan struct{}
	done      chan struct{}
}

// claim marks the lease on name busy for an exchange of this Store if
// this Store keeps it and no exchange of its own holds it, and returns
// it; nil otherwise.
func (s *Store) claim(name string) *heldLease {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	h := s.held[name]
	if h == nil || h.keep == nil || h.keep.busy {
		return nil
	}
	h.keep.busy = true
	return h
}

// SoleFor reports whether this Store keeps k's lease, and the keeping's
// epoch (history.KeptWriter). A lease not renewed for half of
// Options.Lease is not trusted.
func (s *Store) SoleFor(k history.Key) (uint64, bool) {
	name := history.LeaseName(history.LeaseConversation, k)
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	h := s.held[name]
	if h == nil || h.keep == nil || time.Since(h.keep.renewed) >= s.lease/2 {
		return 0, false
	}
	return h.keep.epoch, true
}

// keeps reports whether a commit under the lease on name, which this
// Store holds in the table (h), keeps it rather than freeing it: unless
// another Store wanted it lately. s.heldMu is held.
func (s *Store) keeps(name string, h *heldLease) bool {
	if h.unkept || h.joined == 0 || h.joined != s.sole.joinedSince() {
		// Taken while the sole-writer lock was not held, or it was lost
		// since: a database restart may have lost the take (it commits
		// lazily), and another Store may have held the database alone
		// and written without looking at lease rows.
		return false
	}
	if h.keep != nil {
		return !h.keep.wanted
	}
	if s.noKeep {
		return false
	}
	at, ok := s.keeper.contested[name]
	return !ok || time.Since(at) >= keepAfterWant
}

// kept records that a commit under h, the lease on name, kept it: h is
// no longer busy, and is from now on renewed by the keeper. A lease taken
// by this exchange becomes kept (its own renewal stops); one kept already
// stays so.
func (s *Store) kept(name string, h *heldLease) {
	s.heldMu.Lock()
	if s.held[name] != h {
		s.heldMu.Unlock()
		return
	}
	stop, done := h.stop, h.done
	h.stop, h.done = nil, nil
	if h.unkept || (h.keep != nil && h.keep.wanted) {
		// Not to be kept since keeps said so: let it go.
		delete(s.held, name)
		s.heldMu.Unlock()
		if stop != nil {
			close(stop)
			<-done
		}
		s.free([]string{name}, []string{h.holder})
		return
	}
	if h.keep == nil {
		s.keeper.epochs++
		h.keep = &keeping{epoch: keptEpoch | s.keeper.epochs, renewed: h.taken}
	}
	h.keep.busy, h.keep.used = false, time.Now()
	s.heldMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	s.keeper.start.Do(func() {
		s.keeper.running = true
		go s.keep()
	})
}

// unclaim ends an exchange's hold on h, a kept lease, that did not
// commit: kept still, unless another Store wanted it meanwhile.
func (s *Store) unclaim(name string, h *heldLease) {
	s.heldMu.Lock()
	wanted := s.held[name] == h && h.keep.wanted
	h.keep.busy, h.keep.used = false, time.Now()
	if wanted {
		delete(s.held, name)
	}
	s.heldMu.Unlock()
	if wanted {
		s.free([]string{name}, []string{h.holder})
	}
}

// wanted lets the lease on name go, if this Store keeps it, for another
// Store that asked for it: at once unless an exchange of this Store holds
// it, else in that exchange's commit (or unclaim). This Store does not
// keep it again for keepAfterWant.
func (s *Store) wanted(name string) {
	s.heldMu.Lock()
	s.keeper.contested[name] = time.Now()
	h := s.held[name]
	if h == nil || h.keep == nil {
		s.heldMu.Unlock()
		return
	}
	if h.keep.busy {
		h.keep.wanted = true
		s.heldMu.Unlock()
		return
	}
	delete(s.held, name)
	s.heldMu.Unlock()
	s.free([]string{name}, []string{h.holder})
}

// free frees the lease rows names held by holders.
func (s *Store) free(names, holders []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.pool.Exec(ctx, keepFreeSQL, names, holders)
}

// keep renews the kept leases every third of Options.Lease, lets those
// idle for keepIdle go, and forgets what was wanted over keepAfterWant
// ago, until Close.
func (s *Store) keep() {
	defer close(s.keeper.done)
	t := time.NewTicker(s.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-s.keeper.stop:
			return
		case <-t.C:
			s.renewKept()
		}
	}
}

// renewKept is one round of keep.
func (s *Store) renewKept() {
	now := time.Now()
	var renew, renewBy, idle, idleBy []string
	s.heldMu.Lock()
	for name, at := range s.keeper.contested {
		if now.Sub(at) >= keepAfterWant {
			delete(s.keeper.contested, name)
		}
	}
	for name, h := range s.held {
		switch {
		case h.keep == nil:
		case !h.keep.busy && now.Sub(h.keep.used) >= keepIdle:
			delete(s.held, name)
			idle, idleBy = append(idle, name), append(idleBy, h.holder)
		default:
			renew, renewBy = append(renew, name), append(renewBy, h.holder)
		}
	}
	s.heldMu.Unlock()
	if len(idle) > 0 {
		s.free(idle, idleBy)
	}
	if len(renew) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.lease/3)
	defer cancel()
	rows, err := s.pool.Query(ctx, keepRenewSQL, renew, renewBy, s.lease.Microseconds(), s.holder)
	if err != nil {
		return // not renewed: trusted until half the lease is gone
	}
	renewed := make(map[string]bool, len(renew))
	var wanted []string
	for rows.Next() {
		var name string
		var queued bool
		var skip any
		if rows.Scan(&name, &queued, &skip) == nil {
			renewed[name] = true
			if queued {
				wanted = append(wanted, name)
			}
		}
	}
	rows.Close()
	if rows.Err() != nil {
		return
	}
	for _, name := range wanted {
		s.wanted(name)
	}
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	for i, name := range renew {
		h := s.held[name]
		if h == nil || h.keep == nil || h.holder != renewBy[i] {
			continue
		}
		if renewed[name] {
			h.keep.renewed = now
		} else if !h.keep.busy {
			delete(s.held, name) // lost: another Store may hold it
		} else {
			h.keep.renewed, h.unkept = time.Time{}, true // lost: not trusted, nor kept
		}
	}
}

// letKept stops the keeper and frees every kept lease (Close).
func (s *Store) letKept() {
	s.keeper.closing.Do(func() {
		close(s.keeper.stop)
		s.keeper.start.Do(func() {}) // none starts after this
		if s.keeper.running {
			<-s.keeper.done
		}
	})
	var names, holders []string
	s.heldMu.Lock()
	for name, h := range s.held {
		if h.keep != nil {
			delete(s.held, name)
			names, holders = append(names, name), append(holders, h.holder)
		}
	}
	s.heldMu.Unlock()
	if len(names) > 0 {
		s.free(names, holders)
	}
}

// fence takes k's lease for a write of k that carries no exchange's
// lease (a summary landing, a change of the conversation API, a delete),
// until release: another Store may keep the lease and trust its cache
// for k, and lets it go first (it is notified). Nothing is taken while
// this Store is the only writer, or holds the lease already (then the
// cache it writes through is the one that trusts).
func (s *Store) fence(ctx context.Context, k history.Key) (release func(), err error) {
	if _, sole := s.sole.sole(); sole {
		return func() {}, nil
	}
	name := history.LeaseName(history.LeaseConversation, k)
	s.heldMu.Lock()
	h := s.held[name]
	inTable := h != nil && h.inTable
	s.heldMu.Unlock()
	switch {
	case h == nil:
		return s.Acquire(ctx, name)
	case !inTable:
		return func() {}, s.publish(ctx, name, h)
	}
	return func() {}, nil
}

// publish takes the row of h, the lease on name, which this Store holds
// in memory only while others write the database: it took it as the sole
// writer, and could not write it into the table when it stopped being
// one (publishLeases: another Store held the row). It waits for the row:
// a Store that shares the database writes a conversation only under its
// lease's row, which another Store keeping the lease relies on.
func (s *Store) publish(ctx context.Context, name string, h *heldLease) error {
	var p pause
	for {
		taken, joined := time.Now(), s.sole.joinedSince()
		ok, err := s.take(ctx, name, h.holder, true)
		if err != nil {
			return err
		}
		if ok {
			s.heldMu.Lock()
			if !h.inTable {
				h.inTable, h.taken, h.joined = true, taken, joined
				s.renewing(name, h)
			}
			s.heldMu.Unlock()
			return nil
		}
		if err := p.wait(ctx); err != nil {
			s.unqueue(name)
			return err
		}
	}
}

// dropKept stops keeping every lease, when the sole-writer lock's
// connection broke: another Store may then hold the database alone, and
// a sole writer writes without looking at lease rows (sole.go). A lease
// an exchange holds (kept or taken) is not trusted, nor kept after its
// commit, which frees it; the others are freed now if the database
// answers, else they expire.
func (s *Store) dropKept() {
	var names, holders []string
	s.heldMu.Lock()
	for name, h := range s.held {
		switch {
		case !h.inTable:
		case h.keep == nil || h.keep.busy:
			// An exchange holds it: not trusted, nor kept after its
			// commit, which frees it.
			h.unkept = true
			if h.keep != nil {
				h.keep.renewed = time.Time{}
			}
		default:
			delete(s.held, name)
			names, holders = append(names, name), append(holders, h.holder)
		}
	}
	s.heldMu.Unlock()
	if len(names) > 0 {
		go s.free(names, holders)
	}
}
