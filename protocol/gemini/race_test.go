//go:build race

package gemini

// raceEnabled reports a -race build, whose instrumentation allocates
// where a normal build does not: allocation counts mean nothing there.
const raceEnabled = true
