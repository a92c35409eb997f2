package main

import (
	"strings"
	"testing"
)

// A recording that outlasts the load generator: its exit, then the
// cores idle. -end load keeps what came before the exit.
const script = `          recall [000]   775.388045: 
	          458778 github.com/valyala/fasthttp.(*Server).serveConn
	           93781 runtime.goexit.abi0

            load [001]   775.388100: 
	          de6e internal/runtime/syscall/linux.Syscall6

         swapper [000]   775.388300: 
	ffffffff8124a15a do_idle

            load [001]   775.388500: 
	ffffffff81367034 do_exit
	ffffffff81367a29 do_group_exit

         swapper [000]   775.388700: 
	ffffffff8124a15a do_idle

         swapper [001]   775.388750: 
	ffffffff8124a15a do_idle
`

func TestUntilDropsTheTailAfterTheLoadExits(t *testing.T) {
	samples, err := read(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 6 || samples[0].at != 775.388045 || samples[0].comm != "recall" {
		t.Fatalf("read %d samples, first %+v", len(samples), samples[0])
	}
	kept := until(samples, "load")
	if len(kept) != 3 {
		t.Fatalf("kept %d samples, want the 3 before the exit: %+v", len(kept), kept)
	}
	for _, s := range kept {
		if s.at >= 775.388500 {
			t.Errorf("kept a sample at %v, after the load's exit", s.at)
		}
	}
	if got := until(samples, "nginx"); len(got) != len(samples) {
		t.Errorf("a process that never exits cut %d samples", len(samples)-len(got))
	}
}

func TestReadWithoutTimes(t *testing.T) {
	samples, err := read(strings.NewReader("recall [000]\n\t458778 do_idle\n\nload [001]\n\tffff do_exit\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 2 || samples[1].comm != "load" || samples[1].at != 0 {
		t.Fatalf("read %+v", samples)
	}
	if got := until(samples, "load"); len(got) != 2 {
		t.Errorf("samples without times were cut to %d", len(got))
	}
}
