package storetest

import (
	"fmt"
	"testing"

	"github.com/recallproxy/recall/history"
)

// RunCalibrations runs the calibration cases (history.CalibrationStore,
// which the stores made by open must implement) against stores made by
// open, each case with a fresh one. reopen closes s and opens the same
// data again, as a restart would.
func RunCalibrations(t *testing.T, open func(t *testing.T) history.Store, reopen func(t *testing.T, s history.Store) history.Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s history.Store, reopen func(t *testing.T, s history.Store) history.Store)
	}{
		{"CalibrationsReplacedPerTenant", testCalibrationsReplaced},
		{"CalibrationsSurviveReopen", testCalibrationsReopen},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t), reopen) })
	}
}

func calibrationStore(t *testing.T, s history.Store) history.CalibrationStore {
	t.Helper()
	cs, ok := s.(history.CalibrationStore)
	if !ok {
		t.Fatalf("%T does not implement history.CalibrationStore", s)
	}
	return cs
}

func mustCalibrations(t *testing.T, cs history.CalibrationStore) string {
	t.Helper()
	got, err := cs.Calibrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(got)
}

func mustPut(t *testing.T, cs history.CalibrationStore, tenant string, cals ...history.Calibration) {
	t.Helper()
	if err := cs.PutCalibrations(ctx, tenant, cals); err != nil {
		t.Fatal(err)
	}
}

var (
	calA = history.Calibration{Model: "gpt-4o", Ratio: 1.25, Samples: 7, UpdatedAt: 1700000000123456789}
	calB = history.Calibration{Model: "claude-x", Ratio: 0.75, Samples: 3, Window: 190000, UpdatedAt: 1700000000000000001}
	calC = history.Calibration{Model: "gpt-4o-mini", Ratio: 2, Samples: 40, UpdatedAt: 1700000000000000002}
	// calD is a window learned before any sample.
	calD = history.Calibration{Model: "my-llama", Ratio: 1, Window: 4096, UpdatedAt: 1700000000000000003}
)

// A put replaces its tenant's calibrations, and only its tenant's (one
// whose id extends another's included); listed by model within a tenant.
func testCalibrationsReplaced(t *testing.T, s history.Store, _ func(*testing.T, history.Store) history.Store) {
	cs := calibrationStore(t, s)
	if got := mustCalibrations(t, cs); got != "map[]" {
		t.Errorf("empty store: got %s, want none", got)
	}
	mustPut(t, cs, "t", calB, calA)
	mustPut(t, cs, "t2", calC)
	want := fmt.Sprint(map[string][]history.Calibration{"t": {calB, calA}, "t2": {calC}})
	if got := mustCalibrations(t, cs); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	mustPut(t, cs, "t", calC)
	want = fmt.Sprint(map[string][]history.Calibration{"t": {calC}, "t2": {calC}})
	if got := mustCalibrations(t, cs); got != want {
		t.Errorf("after replacing t's: got %s, want %s", got, want)
	}
	mustPut(t, cs, "t2")
	want = fmt.Sprint(map[string][]history.Calibration{"t": {calC}})
	if got := mustCalibrations(t, cs); got != want {
		t.Errorf("after emptying t2's: got %s, want %s", got, want)
	}
}

// Calibrations are kept across a restart, exactly.
func testCalibrationsReopen(t *testing.T, s history.Store, reopen func(*testing.T, history.Store) history.Store) {
	mustPut(t, calibrationStore(t, s), "t", calB, calA, calD)
	want := fmt.Sprint(map[string][]history.Calibration{"t": {calB, calA, calD}})
	s = reopen(t, s)
	if got := mustCalibrations(t, calibrationStore(t, s)); got != want {
		t.Errorf("after reopening: got %s, want %s", got, want)
	}
}
