package engine

import (
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// BenchmarkRecordTwoLoops records transactions from two event loops at
// once, each on its own thread and into its own shard, as a run at -j 2
// does after every transaction. The loops share nothing, so the time per
// transaction should be what one loop alone takes; memory that one loop
// writes on a cache line the other reads or writes (false sharing) shows
// as a multiple of it.
func BenchmarkRecordTwoLoops(b *testing.B) {
	for _, loops := range []int{1, 2} {
		b.Run(map[int]string{1: "loops=1", 2: "loops=2"}[loops], func(b *testing.B) {
			cfg := &Config{Clients: 8, Threads: loops}
			r := &run{cfg: cfg, col: newCollector(shardCount(cfg), 1), cmds: newCommandRecorder([]int{2}, false)}
			clients := make([]*client, cfg.Clients)
			for i := range clients {
				clients[i] = &client{id: i, r: r, shard: r.col.shardFor(i)}
			}
			if err := r.makeLoops(clients); err != nil {
				b.Fatal(err)
			}
			defer r.closeLoops()
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			var cpuMu sync.Mutex
			var cpuNS int64
			for _, l := range r.loops {
				wg.Add(1)
				go func() {
					defer wg.Done()
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					t0 := threadCPU()
					defer func() {
						cpuMu.Lock()
						cpuNS += threadCPU() - t0
						cpuMu.Unlock()
					}()
					out := txOutcome{poolWait: -1}
					for i := range b.N / loops {
						c := l.clients[i%len(l.clients)]
						lat := int64(200 + i%512)
						c.record(&out, 0, 0, lat)
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(cpuNS)/float64(b.N), "cpu-ns/op")
		})
	}
}

// threadCPU is the CPU time the calling thread has used, in ns.
func threadCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Recording a transaction allocates nothing: at tens of thousands of
// transactions a second per loop, an allocation each would bring the GC
// onto the loops' threads.
func TestRecordAllocatesNothing(t *testing.T) {
	cfg := &Config{Clients: 2, Threads: 2}
	r := &run{cfg: cfg, col: newCollector(shardCount(cfg), 1), cmds: newCommandRecorder([]int{2}, true)}
	c := &client{id: 0, r: r, shard: r.col.shardFor(0)}
	out := txOutcome{poolWait: -1}
	lat := int64(100)
	if n := testing.AllocsPerRun(1000, func() {
		lat = lat*7%100_000 + 1
		c.record(&out, 0, 0, lat)
		r.cmds.scripts[0][1].latency(lat)
	}); n != 0 {
		t.Errorf("record allocated %.1f times per transaction, want 0", n)
	}
}
