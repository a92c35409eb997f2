package history

// A cached conversation keeps its messages' text (Raw) in arenas of its
// own: each message the entry takes in is copied behind the one before
// it, a comma between them, so that the messages of one context lie back
// to back in memory as they will in the upstream body. Without it each
// message's text lay wherever its request or its read from the store had
// put it, among every other conversation's, and copying a cold 60 KB
// context into the upstream body cost a memory stall per message
// (docs/performance.md, "A conversation's text back to back").
//
// An arena is a chunk with spare room for the next turns; a turn that
// does not fit starts a chunk of its own, leaving the older messages
// where they are. Chunks never move: a snapshot handed out keeps reading
// the bytes it was given. Each message's Raw has its capacity clipped to
// its length, so an append to one never writes into the next.

const (
	// arenaSpareMin and arenaSpareMax bound the room a new chunk leaves
	// for later turns: half the text of the chunk before and the new
	// turn, within them.
	arenaSpareMin = 256
	arenaSpareMax = 16 << 10
)

// keep copies the text of ms, messages the entry is taking in (in order,
// after those it holds), into its arena and points their Raw there. ms
// must be an array no snapshot shares. It returns the change in e.slack,
// which the caller adds to e.bytes.
func (e *cacheEntry) keep(ms []Message) int {
	need := 0
	for i := range ms {
		if n := len(ms[i].Raw); n > 0 {
			need += n + 1
		}
	}
	before := e.slack
	if need > 0 && cap(e.arena)-len(e.arena) < need {
		// The rest of the current chunk stays in slack: its messages
		// still hold it.
		spare := min(max((len(e.arena)+need)/2, arenaSpareMin), arenaSpareMax)
		e.arena = make([]byte, 0, need+spare)
		e.slack += cap(e.arena)
	}
	for i := range ms {
		raw := ms[i].Raw
		if len(raw) == 0 {
			continue
		}
		off := len(e.arena)
		e.arena = append(e.arena, raw...)
		ms[i].Raw = e.arena[off:len(e.arena):len(e.arena)]
		e.arena = append(e.arena, ',')
		e.slack -= len(raw)
	}
	return e.slack - before
}

// dropped notes that the entry let go of messages whose text, raw bytes
// in all, stays in its chunks until compact, and compacts them when what
// they hold for nobody outgrows what they hold for the entry. tail must
// be an array no snapshot shares. It returns the change in e.slack.
func (e *cacheEntry) dropped(raw int) int {
	before := e.slack
	e.slack += raw
	live := 0
	for i := range e.tail {
		live += len(e.tail[i].Raw)
	}
	if e.slack > live/2+arenaSpareMax {
		e.arena, e.slack = nil, 0
		e.keep(e.tail)
	}
	return e.slack - before
}
