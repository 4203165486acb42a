package servicerules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// The tests here hold each rule to the shape of the series it reads,
// on runs built from the series names alone (docs/services.md): the
// cases a recording cannot show side by side (what binds, CPU against
// pool against database; a breaker that opens once against one that
// flaps). recorded_test.go holds them to real runs.

// shapedRun is a run of ticks 1 s apart whose service samples values
// gives (keys without the service's name), with scenario.yaml beside it.
func shapedRun(t *testing.T, scenarioYAML string, ticks int, values func(tick int) map[string]float64) *timeline.Run {
	t.Helper()
	run := shapedRunNoParse(t, scenarioYAML, ticks, values)
	var sc scenarioServices
	if err := yaml.Unmarshal([]byte(scenarioYAML), &sc); err != nil {
		t.Fatal(err)
	}
	for _, w := range sc.Workloads {
		run.Manifest.Workloads = append(run.Manifest.Workloads, timeline.WorkloadInfo{Name: w.Name})
	}
	return run
}

// shapedRunNoParse is shapedRun for a scenario that need not be valid
// YAML: the run's manifest has no workloads.
func shapedRunNoParse(t *testing.T, scenarioYAML string, ticks int, values func(tick int) map[string]float64) *timeline.Run {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, timeline.ScenarioFile), []byte(scenarioYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	run := &timeline.Run{Dir: dir}
	run.Manifest.Interval = 1
	for i := 1; i <= ticks; i++ {
		v := map[string]float64{}
		for k, x := range values(i) {
			v[svcmetric.Key("api", k, "")] = x
		}
		run.Samples = append(run.Samples, timeline.Sample{Source: svcmetric.Source, T: float64(i), Values: v})
	}
	return run
}

// only runs one rule and returns its findings.
func only(r diagnose.Rule, run *timeline.Run) []diagnose.Finding {
	return diagnose.Diagnose(run, []diagnose.Rule{r})
}

const fifoService = `
services:
  - name: api
    max_threads: 1000
    timeout: 30s
    cores: 2
    cpu_per_request: 40ms
workloads:
  - name: pages
    service: api
`

func TestOldestStarveShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		good     float64 // goodput during the surge (throughput 50)
		wasted   float64
		severity string // "" for no finding
	}{
		{"goodput falls, wasted work: the oldest starve", 5, 45, diagnose.Critical},
		{"every answer in time: no finding", 50, 0, ""},
		{"late but nothing wasted (callers wait): no finding", 5, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := shapedRun(t, fifoService, 60, func(i int) map[string]float64 {
				v := map[string]float64{svcmetric.Arrivals: 100, svcmetric.Throughput: 50, svcmetric.Goodput: 50}
				if i > 20 {
					v[svcmetric.Goodput], v[svcmetric.Wasted], v[svcmetric.Timeouts] = tc.good, tc.wasted, 50-tc.good
					v[svcmetric.QueueOldestAge], v[svcmetric.QueueLength] = float64(i-10), float64(50*(i-20))
				}
				return v
			})
			fs := only(oldestStarve{}, run)
			if tc.severity == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Severity != tc.severity {
				t.Fatalf("want one %s finding, got %+v", tc.severity, fs)
			}
			f := fs[0]
			if !strings.Contains(f.Headline, "api") || !strings.Contains(f.Remedy, "lifo") || !strings.Contains(f.Remedy, "cancel_on_timeout") {
				t.Errorf("headline or remedy misses the service or the fixes: %q / %q", f.Headline, f.Remedy)
			}
			if f.Workload != "pages" {
				t.Errorf("workload %q, want pages", f.Workload)
			}
		})
	}
}

func TestSaturationTellsWhatBinds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                  string
		busy, runQueue, waits float64
		want                  string // in the headline; "" for no finding
		queued                float64
	}{
		{"threads wait for a core: CPU", 1000, 998, 0, "bound by the CPU", 500},
		{"threads wait for a connection: pool", 200, 0, 180, "bound by the connection pool", 50},
		{"threads hold connections: database", 200, 0, 2, "bound by the database", 50},
		{"nothing waits: no finding", 150, 0, 0, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := shapedRun(t, fifoService, 20, func(i int) map[string]float64 {
				return map[string]float64{svcmetric.Arrivals: 100, svcmetric.Throughput: 90, svcmetric.BusyThreads: tc.busy,
					"instance.0." + svcmetric.CPURunQueue: tc.runQueue, svcmetric.PoolWaiters: tc.waits, svcmetric.QueueLength: tc.queued,
					svcmetric.Timeouts: 1}
			})
			fs := only(saturation{}, run)
			if tc.want == "" {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || !strings.Contains(fs[0].Headline, tc.want) {
				t.Fatalf("want one finding saying %q, got %+v", tc.want, fs)
			}
			if fs[0].Severity != diagnose.Warning {
				t.Errorf("severity %s, want warning (callers gave up)", fs[0].Severity)
			}
		})
	}
}

func TestRetryStormShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		amp  float64
		want bool
	}{
		{"2.5 attempts per request while calls fail", 2.5, true},
		{"a retry now and then", 1.1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := shapedRun(t, fifoService, 20, func(i int) map[string]float64 {
				return map[string]float64{svcmetric.Arrivals: 100, svcmetric.Amplification: tc.amp, svcmetric.Retries: 100 * (tc.amp - 1), svcmetric.Failed: 30}
			})
			if got := len(only(retryStorm{}, run)) == 1; got != tc.want {
				t.Fatalf("finding %v, want %v", got, tc.want)
			}
		})
	}
}

func TestThrottleLagShape(t *testing.T) {
	t.Parallel()
	const scenario = `
services:
  - name: api
    throttle: {rate: 100, mode: remote, lag: 3s}
workloads:
  - {name: joins, service: api}
`
	for _, tc := range []struct {
		name string
		lag  float64
		want bool
	}{
		{"the limiter sees admissions 3 s late: the surge goes through", 3, true},
		{"a local limiter (no lag) holds the rate", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := shapedRun(t, scenario, 20, func(i int) map[string]float64 {
				v := map[string]float64{svcmetric.Arrivals: 50, svcmetric.ThrottleAdmitted: 50, svcmetric.ThrottleLag: tc.lag}
				if i >= 8 && i < 12 {
					v[svcmetric.Arrivals] = 1000
					v[svcmetric.ThrottleAdmitted] = 1000
					if tc.lag == 0 {
						v[svcmetric.ThrottleAdmitted], v[svcmetric.ThrottleRejected] = 100, 900
					}
				}
				return v
			})
			fs := only(throttleLag{}, run)
			if got := len(fs) == 1; got != tc.want {
				t.Fatalf("finding %v, want %v: %+v", got, tc.want, fs)
			}
			if tc.want && !strings.Contains(fs[0].Remedy, "mode: local") {
				t.Errorf("remedy %q does not name the local limiter", fs[0].Remedy)
			}
		})
	}
}

func TestBreakerFlappingShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		states []float64
		want   string // severity; "" none
	}{
		{"closed all along", []float64{0, 0, 0, 0}, ""},
		{"opens once, recovers: info", []float64{0, 1, 1, 2, 0, 0}, diagnose.Info},
		{"opens, trial calls fail, opens again: flapping", []float64{0, 1, 1, 2, 1, 2, 1, 2, 0}, diagnose.Warning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := shapedRun(t, fifoService, len(tc.states), func(i int) map[string]float64 {
				return map[string]float64{svcmetric.Arrivals: 10, svcmetric.BreakerState + ".db": tc.states[i-1], svcmetric.BreakerRejected + ".db": 5 * tc.states[i-1]}
			})
			fs := only(breakerFlapping{}, run)
			if tc.want == "" {
				if len(fs) != 0 {
					t.Fatalf("want none, got %+v", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Severity != tc.want {
				t.Fatalf("want one %s finding, got %+v", tc.want, fs)
			}
		})
	}
}

func TestHotTargetShape(t *testing.T) {
	t.Parallel()
	const scenario = `
services:
  - name: api
    max_threads: 300
workloads:
  - {name: hot-joins, service: api}
  - {name: other-reads, service: api}
`
	for _, tc := range []struct {
		name       string
		hotLatency float64 // s, queue included
		want       bool
	}{
		{"the hot shard's calls take 5 s past the queue: it holds the threads", 11, true},
		{"both shards as fast: no finding", 6.1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run := shapedRun(t, scenario, 30, func(i int) map[string]float64 {
				v := map[string]float64{svcmetric.Arrivals: 100, svcmetric.BusyThreads: 300}
				if i > 10 {
					v[svcmetric.QueueLength], v[svcmetric.QueueOldestAge] = 500, 6
				}
				return v
			})
			run.Manifest.Targets = []timeline.NamedTarget{{Name: "hot"}, {Name: "other"}}
			run.Manifest.Workloads = []timeline.WorkloadInfo{{Name: "hot-joins", Target: "hot"}, {Name: "other-reads", Target: "other"}}
			for i := 1; i <= 30; i++ {
				hot, other := 0.05, 0.01
				if i > 10 {
					hot, other = tc.hotLatency, 6.01
				}
				run.Intervals = append(run.Intervals,
					timeline.Interval{Workload: "hot-joins", Start: float64(i - 1), End: float64(i), Count: 50, LatencyPct: timeline.Percentiles{P50: int64(hot * 1e6)}},
					timeline.Interval{Workload: "other-reads", Start: float64(i - 1), End: float64(i), Count: 5, LatencyPct: timeline.Percentiles{P50: int64(other * 1e6)}})
			}
			fs := only(hotTarget{}, run)
			if got := len(fs) == 1; got != tc.want {
				t.Fatalf("finding %v, want %v: %+v", got, tc.want, fs)
			}
			if tc.want && (fs[0].Target != "hot" || fs[0].Workload != "hot-joins" || !strings.Contains(fs[0].Remedy, "bulkhead")) {
				t.Errorf("finding names %q/%q, remedy %q: want the hot target, its workload and a bulkhead", fs[0].Target, fs[0].Workload, fs[0].Remedy)
			}
		})
	}
}
