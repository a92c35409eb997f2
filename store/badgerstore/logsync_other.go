//go:build !linux

package badgerstore

import (
	"errors"
	"time"
)

// logSync is Linux's (logsync_linux.go); elsewhere Badger syncs its own
// writes (SyncWrites).
type logSync struct{}

func newLogSync(dir, valueDir string) (*logSync, error) { return nil, errors.ErrUnsupported }

type logSyncRun struct{}

func (l *logSync) sync() error            { return nil }
func (l *logSync) close() error           { return nil }
func (l *logSync) acquire() *aio          { return nil }
func (l *logSync) settle(time.Duration)   {}
func (l *logSync) begin(*aio) *logSyncRun { return nil }
func (r *logSyncRun) end() error          { return nil }

type aio struct{}
