//go:build race

package tokens

// raceEnabled reports a -race build, in which sync.Pool drops items at
// random, so pooled paths allocate.
const raceEnabled = true
