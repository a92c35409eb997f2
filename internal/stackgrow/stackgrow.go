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

// Size is the stack Grow makes room for: about what a streamed answer's
// relay uses. A goroutine that needs more grows on from there.
const Size = 32 << 10

// Grow grows the calling goroutine's stack to hold at least Size bytes
// (a no-op on a stack that does already), at the cost of clearing Size
// bytes once.
//
//go:noinline
func Grow() {
	var frame [Size]byte
	use(&frame)
}

// use keeps frame on Grow's stack: a frame the compiler saw unused would
// not be made.
//
//go:noinline
func use(frame *[Size]byte) { frame[0] = 1 }
