package main

import (
	"encoding/binary"
	"os"
	"sync"
)

// turnLog keeps each answered request's turn, the client's body and the
// answer, durably before the answer goes back: the least a proxy that
// keeps conversations must do before it acknowledges one. Turns are
// appended to one file and made durable with fsync; those that
// arrive while a sync runs are written and synced together after it (a
// group commit, as Recall's durable store does).
type turnLog struct {
	f    *os.File
	in   chan *turnReq
	reqs sync.Pool
}

// turnReq is one turn waiting for its sync.
type turnReq struct {
	rec  []byte
	done chan error
}

// openTurnLog opens (creating) the log at path and starts its writer.
func openTurnLog(path string) (*turnLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	l := &turnLog{f: f, in: make(chan *turnReq, 1024)}
	l.reqs.New = func() any { return &turnReq{done: make(chan error, 1)} }
	go l.run()
	return l, nil
}

// keep returns once the turn of client's body and answer is durable, or
// with the error that kept it from being.
func (l *turnLog) keep(client, answer []byte) error {
	r := l.reqs.Get().(*turnReq)
	r.rec = appendTurn(r.rec[:0], client, answer)
	l.in <- r
	err := <-r.done
	l.reqs.Put(r)
	return err
}

// appendTurn appends a turn's record: each body after its length.
func appendTurn(dst, client, answer []byte) []byte {
	dst = append(binary.AppendUvarint(dst, uint64(len(client))), client...)
	return append(binary.AppendUvarint(dst, uint64(len(answer))), answer...)
}

// run writes and syncs the turns sent to l, each batch the ones waiting
// when the last sync ended, until in is closed.
func (l *turnLog) run() {
	var buf []byte
	var batch []*turnReq
	for r := range l.in {
		batch = append(batch[:0], r)
	more:
		for {
			select {
			case r, ok := <-l.in:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		buf = buf[:0]
		for _, r := range batch {
			buf = append(buf, r.rec...)
		}
		_, err := l.f.Write(buf)
		if err == nil {
			err = l.f.Sync()
		}
		for _, r := range batch {
			r.done <- err
		}
	}
}
