//go:build race

package counttest

// RaceEnabled reports a -race build, whose instrumentation allocates
// where a normal build does not: allocation counts mean nothing there.
const RaceEnabled = true
