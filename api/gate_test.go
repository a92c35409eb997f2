package api

import (
	"context"
	"errors"
	"testing"

	"github.com/recallproxy/recall/internal/apierr"
)

func TestGateRefusesWhenNoSlotFreesInTime(t *testing.T) {
	g := newGate(1, 2)
	leave, err := g.enter(context.Background(), "a")
	if err != nil {
		t.Fatalf("first call: got %v, want a slot", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the waiting call's budget is spent
	if _, err := g.enter(ctx, "b"); !errors.Is(err, apierr.HeavyBusy) {
		t.Errorf("with every slot held: got %v, want apierr.HeavyBusy", err)
	}
	// A refused wait leaves nothing behind: b's bound is whole.
	leave()
	leave() // a second call is harmless
	if _, err := g.enter(context.Background(), "b"); err != nil {
		t.Fatalf("after the slot was given back: got %v, want it", err)
	}
	if _, err := g.enter(ctx, "b"); !errors.Is(err, apierr.HeavyBusy) {
		t.Errorf("b's second call, no slot: got %v, want apierr.HeavyBusy", err)
	}
	if n := g.flying["b"]; n != 1 {
		t.Errorf("got %d of b's calls in flight, want 1", n)
	}
}
