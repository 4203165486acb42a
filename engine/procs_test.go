package engine

import (
	"runtime"
	"testing"
)

// Runs that overlap add their loops up, and the GOMAXPROCS in force
// before the first is put back when the last ends, in any order.
func TestReserveLoopProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // not set by the user
	orig := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(orig)
	runtime.GOMAXPROCS(2)

	rawA, a := reserveLoopProcs(2) // 2 loops + 1
	if got := runtime.GOMAXPROCS(0); got != 3 || !rawA {
		t.Fatalf("after 2 loops: GOMAXPROCS %d, raw %v; want 3, true", got, rawA)
	}
	_, b := reserveLoopProcs(3) // 5 loops + 1
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
	rawC, c := reserveLoopProcs(1)
	if got := runtime.GOMAXPROCS(0); got != 2 || !rawC {
		t.Fatalf("1 loop on 2 Ps: GOMAXPROCS %d, raw %v; want 2, true", got, rawC)
	}
	c()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("after 1 loop: GOMAXPROCS %d, want 2", got)
	}
}

// A GOMAXPROCS the user set is their limit: it stays, and loops that
// would hold every P under it do not wait in raw system calls.
func TestReserveLoopProcsKeepsTheUsersLimit(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	orig := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(orig)
	runtime.GOMAXPROCS(2)

	raw, release := reserveLoopProcs(1)
	if got := runtime.GOMAXPROCS(0); got != 2 || !raw {
		t.Errorf("1 loop: GOMAXPROCS %d, raw %v; want 2, true (a P is left)", got, raw)
	}
	raw2, release2 := reserveLoopProcs(1)
	if got := runtime.GOMAXPROCS(0); got != 2 || raw2 {
		t.Errorf("2 loops: GOMAXPROCS %d, raw %v; want 2, false (no P left)", got, raw2)
	}
	release2()
	release()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("after: GOMAXPROCS %d, want 2", got)
	}
}
