package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// overheadScenario is a closed-model read load, with or without a
// service of ample threads and no limits (its pool as large as the
// clients, so that nobody waits for a connection).
const overheadScenario = `name: service-overhead
duration: 6s
%s
workloads:
  - name: read
    clients: 8
    %s
    scripts:
      - inline: |
          SELECT 1;
`

// BenchmarkServiceOverhead compares a workload through a service with
// ample threads and no limits against the same workload without one
// ("direct", on the engine's event loops) and with a pool of the same
// size ("pooled": the engine's goroutine path, which a service takes),
// on an embedded PostgreSQL: runs of 6 s, alternated, twice each. It
// reports their throughputs, their ratios, and firedrill's own CPU time
// per transaction (less sensitive than throughput to other processes on
// a shared machine). b.N is not used: run with -benchtime=1x.
func BenchmarkServiceOverhead(b *testing.B) {
	var direct, pooled, through overhead
	for range 2 {
		direct.add(overheadRun(b, "", ""))
		pooled.add(overheadRun(b, "", "pool: 8"))
		through.add(overheadRun(b, "services: [{name: api, max_threads: 200, pool: {size: 8}}]", "service: api"))
	}
	b.ReportMetric(direct.tps(), "direct-tps")
	b.ReportMetric(pooled.tps(), "pooled-tps")
	b.ReportMetric(through.tps(), "through-tps")
	b.ReportMetric(through.tps()/direct.tps(), "through/direct")
	b.ReportMetric(through.tps()/pooled.tps(), "through/pooled")
	b.ReportMetric(direct.cpuPerTx(), "direct-cpu-µs/tx")
	b.ReportMetric(pooled.cpuPerTx(), "pooled-cpu-µs/tx")
	b.ReportMetric(through.cpuPerTx(), "through-cpu-µs/tx")
}

// overhead adds up runs of one configuration.
type overhead struct {
	tx      int64
	seconds float64
	cpu     time.Duration
}

func (o *overhead) add(r overheadResult) {
	o.tx += r.tx
	o.seconds += r.seconds
	o.cpu += r.cpu
}

func (o *overhead) tps() float64 { return float64(o.tx) / o.seconds }

func (o *overhead) cpuPerTx() float64 {
	return float64(o.cpu.Microseconds()) / float64(o.tx)
}

type overheadResult struct {
	tx      int64
	seconds float64
	cpu     time.Duration
}

// processCPU is the user and system time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func overheadRun(b *testing.B, services, use string) overheadResult {
	b.Helper()
	dir := b.TempDir()
	src := strings.Replace(strings.Replace(overheadScenario, "%s", services, 1), "%s", use, 1)
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	sc, err := scenario.Load(path, kinds.Registry().ScenarioOptions())
	if err != nil {
		b.Fatal(err)
	}
	var log strings.Builder
	var cpuAtStart time.Duration
	res, err := Run(context.Background(), Options{Scenario: sc, Backends: kinds.Registry(), RunDir: dir + "/run", Log: &log, NoSamplers: true,
		OnTick: func(t float64, _ []timeline.Interval, _ []timeline.Sample) {
			if cpuAtStart == 0 {
				cpuAtStart = processCPU(b)
			}
		}})
	if err != nil {
		b.Fatalf("Run: %v\n%s", err, log.String())
	}
	cpu := processCPU(b) - cpuAtStart
	run, err := timeline.Open(res.Dir)
	if err != nil {
		b.Fatal(err)
	}
	var out overheadResult
	first := true
	for _, iv := range run.WorkloadIntervals("read") {
		if first { // the CPU is counted from the end of the first tick
			first = false
			continue
		}
		out.tx += iv.Count
		out.seconds += iv.End - iv.Start
	}
	out.cpu = cpu
	return out
}
