package runner

import (
	"testing"

	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"

	"github.com/firedrill/firedrill/service/servicetest"
	"github.com/firedrill/firedrill/service/svcmetric"
)

// A workload through a service runs its transactions on the real server
// and records the service's series on the run's clock: while the threads
// hold the rate nothing queues; in the surge the queue fills, requests
// are refused and callers time out. Little's law holds on the series.
func TestServiceSeriesOnTheTimeline(t *testing.T) {
	// Not parallel: its steady rate needs the CPU that the multixact
	// test's eight clients take (goodput 36/s of 80 beside it once).
	sc, err := scenario.Load("testdata/service-short.yaml", kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	run := runLoaded(t, sc)
	// Thresholds on the service's metrics are measured off its series.
	if len(sc.Thresholds) != 4 {
		t.Fatalf("%d thresholds, want 4", len(sc.Thresholds))
	}
	for _, th := range sc.Thresholds {
		scope, _, _ := th.Split()
		v, why, ok := th.Measure(run, scope)
		if !ok || !th.Holds(v) {
			t.Errorf("threshold %s %s: measured %v (%s, ok %v)", th.Metric, th.Text, v, why, ok)
		}
	}
	samples := run.SourceSamples(svcmetric.Source)
	servicetest.CheckLittle(t, samples)
	key := func(m string) string { return svcmetric.Key("api", m, "") }
	steady := over(run.Series(svcmetric.Source, key(svcmetric.QueueLength)), 2, 7.5)
	surge := over(run.Series(svcmetric.Source, key(svcmetric.QueueLength)), 9, 12)
	if steady.n == 0 || surge.n == 0 {
		t.Fatalf("no queue_length samples: %d before the surge, %d in it", steady.n, surge.n)
	}
	// 80/s × 20 ms on 4 threads: ρ = 0.4, a short queue at most (more
	// on a loaded machine, where \sleep and the query take longer).
	if steady.mean > 10 {
		t.Errorf("queue before the surge: mean %.1f, want near 0", steady.mean)
	}
	if surge.max < 30 {
		t.Errorf("queue in the surge: at most %.0f, want it near full (40)", surge.max)
	}
	refused := over(run.Series(svcmetric.Source, key(svcmetric.Refused)), 9, 12.5)
	if refused.max <= 0 {
		t.Errorf("no refusals in the surge (380/s offered to 4 threads of ~20 ms)")
	}
	busy := over(run.Series(svcmetric.Source, key(svcmetric.BusyThreads)), 9, 12)
	if busy.max < 4 {
		t.Errorf("busy threads in the surge: at most %.0f, want all 4", busy.max)
	}
	good := over(run.Series(svcmetric.Source, key(svcmetric.Goodput)), 2, 7.5)
	if good.mean < 60 || good.mean > 100 {
		t.Errorf("goodput before the surge: %.1f/s, want about 80", good.mean)
	}
	// The database saw the transactions: the workloads' intervals count them.
	if n := tps(run, "steady", 2, 7.5); n < 60 {
		t.Errorf("steady workload: %.1f transactions/s on the server, want about 80", n)
	}
	var info bool
	for _, w := range run.Manifest.Workloads {
		info = info || w.Service == "api"
	}
	if !info {
		t.Errorf("run.json names no workload's service")
	}
}
