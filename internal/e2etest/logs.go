package e2etest

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// LogBuffer collects the server's log lines; a test can wait for one.
// It is safe for concurrent use.
type LogBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed and replaced on every write
}

// Write appends p and wakes whoever waits in WaitFor.
func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// WaitFor waits until the buffer holds sub, or reports false after 10s.
func (s *LogBuffer) WaitFor(sub string) bool {
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), sub) {
			s.mu.Unlock()
			return true
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-deadline:
			return false
		}
	}
}

// String returns everything written so far.
func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
