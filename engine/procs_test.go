package engine

import (
	"runtime"
	"testing"
)

// Runs that overlap add their loops up, and the GOMAXPROCS in force
// before the first is put back when the last ends, in any order.
func TestReserveLoopProcs(t *testing.T) {
	orig := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(orig)
	runtime.GOMAXPROCS(2)

	a := reserveLoopProcs(2) // 2 loops + 1
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("after 2 loops: GOMAXPROCS %d, want 3", got)
	}
	b := reserveLoopProcs(3) // 5 loops + 1
	if got := runtime.GOMAXPROCS(0); got != 6 {
		t.Fatalf("after 5 loops: GOMAXPROCS %d, want 6", got)
	}
	a()
	a() // a second call gives nothing back twice
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("after the first run ended: GOMAXPROCS %d, want 4", got)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("after both ended: GOMAXPROCS %d, want 2 (as before)", got)
	}

	// One loop on 2 Ps already leaves one free: nothing changes.
	c := reserveLoopProcs(1)
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("1 loop on 2 Ps: GOMAXPROCS %d, want 2", got)
	}
	c()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("after 1 loop: GOMAXPROCS %d, want 2", got)
	}
}
