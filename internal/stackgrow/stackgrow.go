// Package stackgrow grows a new goroutine's stack before its work does.
//
// A goroutine starts on a small stack, which the runtime doubles whenever
// a call needs more, copying the whole stack and adjusting every frame's
// pointers each time. A goroutine made per request that goes deep (a
// streamed answer's relay: the pipeline, the renderer, the store's
// commit) paid for three or four such copies each, at the depth it had
// reached: 5-17 µs of CPU a streamed request in the load script's
// profiles, more than the rendering it interrupted. Grow, called first
// thing, makes the one growth while the stack is shallow, and so cheap.
package stackgrow

// Size is the stack Grow leaves: the largest the runtime keeps ready in
// each processor's cache of free stacks (larger ones come from the
// heap, under its lock, which cost a streamed request 2 µs more in the
// load script's profiles at 32 KiB). A goroutine that needs more grows
// on from there, one copy.
const Size = 16 << 10

// frame is Grow's frame: Size less room for the stack guard and the
// caller's frames, so that the one growth it causes lands on Size.
const frame = Size - 2<<10

// Grow grows the calling goroutine's stack to Size bytes (a no-op on a
// stack that holds frame bytes more already), at the cost of clearing
// frame bytes once.
//
//go:noinline
func Grow() {
	var f [frame]byte
	use(&f)
}

// use keeps f on Grow's stack: a frame the compiler saw unused would
// not be made.
//
//go:noinline
func use(f *[frame]byte) { f[0] = 1 }
