package engine

import (
	"os"
	"runtime"
	"sync"
)

// Event loops block in epoll through raw system calls that the Go runtime
// does not see (eventLoop.block), so each keeps its P (the runtime's
// right to run Go code) while it waits. With a P free for the rest of the
// program (the supervisor's ticks, samplers, the GC's workers) that costs
// nothing. When the loops held every P, they used to block through
// syscall.Syscall instead, and then every wait that outlasted a sysmon
// tick had its P taken back (retake: no idle P was left), handed to a
// spinning thread that found nothing to do and slept again, while sysmon,
// finding a P to retake on every pass, kept waking every 20 µs: at -j 2
// on 2 cores that doubled the client's CPU per select-only transaction
// (26 µs against 11 µs at -j 1; pgbench 14 µs) with twice its voluntary
// context switches. So while loops run, the process has one P more than
// it has loops: the loops are the threads -j asked for, as pgbench's
// threads are, and GOMAXPROCS keeps bounding the rest.
//
// GOMAXPROCS is the process's, so the reservation is too: runs that
// overlap (a scenario's workloads) add their loops up, and the value in
// force before the first of them is put back when the last one ends.
//
// A GOMAXPROCS the user set in the environment is a limit they chose
// (GOMAXPROCS=1 to see what a starved generator looks like): it is left
// alone, and loops that would then hold every P wait in ordinary system
// calls, as before, whose P the runtime can hand over.
var loopProcs struct {
	mu    sync.Mutex
	loops int // event loops of the runs under way
	saved int // GOMAXPROCS before loops raised it; 0 = not raised
}

// reserveLoopProcs makes room for n more event loops and one P beside
// them, and says whether the loops may wait in raw system calls (a P is
// left for the rest); the returned func gives the room back (once).
func reserveLoopProcs(n int) (raw bool, release func()) {
	lp := &loopProcs
	lp.mu.Lock()
	lp.loops += n
	cur := runtime.GOMAXPROCS(0)
	if lp.loops+1 > cur && os.Getenv("GOMAXPROCS") == "" {
		if lp.saved == 0 {
			lp.saved = cur
		}
		cur = lp.loops + 1
		runtime.GOMAXPROCS(cur)
	}
	raw = lp.loops < cur
	lp.mu.Unlock()
	var once sync.Once
	return raw, func() {
		once.Do(func() {
			lp.mu.Lock()
			defer lp.mu.Unlock()
			lp.loops -= n
			if lp.saved == 0 {
				return
			}
			if lp.loops == 0 {
				runtime.GOMAXPROCS(lp.saved)
				lp.saved = 0
			} else if want := max(lp.loops+1, lp.saved); want < runtime.GOMAXPROCS(0) {
				runtime.GOMAXPROCS(want)
			}
		})
	}
}
