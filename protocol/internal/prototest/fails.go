package prototest

import (
	"runtime"
	"testing"
)

// recorder is a testing.TB whose failures are recorded instead of
// reported.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(...any)          { r.failed = true; runtime.Goexit() }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }
func (r *recorder) Errorf(string, ...any) { r.failed = true }

// Fails reports whether check fails the TB it is given, without failing
// t: the tests of a check show it failing what it should.
func Fails(t testing.TB, check func(testing.TB)) bool {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.failed
}
