package diagnose

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// rateRun builds a 30 s run of one arrival-rate workload whose calls take
// serviceS each once started, on the given clients, with pool waits of
// poolS per call.
func rateRun(rate float64, clients int, serviceS, poolS float64) *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Host: timeline.Host{CPUs: 2},
		Workloads: []timeline.WorkloadInfo{{Name: "w", Clients: clients, Rate: rate}}}}
	capacity := float64(clients) / serviceS
	done := min(rate, capacity)
	lag := 0.0
	for i := 1; i <= 30; i++ {
		lag += (rate - done) / rate // due transactions pile up
		t := float64(i)
		run.Intervals = append(run.Intervals, timeline.Interval{Workload: "w", Start: t - 1, End: t, Clients: clients, Rate: rate,
			Count: int64(done), LagMeanUS: 1e6 * lag,
			LatencyPct:  timeline.Percentiles{P50: int64(1e6 * (lag + serviceS)), Max: int64(1e6 * (lag + 2*serviceS))},
			PoolWaitPct: timeline.Percentiles{P50: int64(1e6 * poolS)}})
		run.Samples = append(run.Samples, timeline.Sample{Source: "firedrill", T: t, Values: map[string]float64{"cpu": 0.1, "cpus": 2}})
	}
	return run
}

func TestTooFewClients(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		rate            float64
		clients         int
		serviceS, poolS float64
		want            bool
	}{
		{"one client for 5 calls/s of 1 s each", 5, 1, 1, 0, true},
		{"enough clients: 8 for 5/s of 1 s", 5, 8, 1, 0, false},
		{"the application's pool is the limit", 5, 2, 1, 0.8, false},
		{"fast calls keep up", 100, 2, 0.005, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := GeneratorLimited(GeneratorServer{}).Check(rateRun(tt.rate, tt.clients, tt.serviceS, tt.poolS))
			if got := len(fs) > 0; got != tt.want {
				t.Fatalf("fired %v, want %v: %v", got, tt.want, fs)
			}
			if tt.want && (!strings.Contains(fs[0].Headline, "too few clients") || !strings.Contains(fs[0].Remedy, "needs about")) {
				t.Errorf("headline %q remedy %q", fs[0].Headline, fs[0].Remedy)
			}
		})
	}
}

func TestCPULimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values map[string]float64
		want   string
	}{
		{"GOMAXPROCS lowered", map[string]float64{"cpus": 1, "cpus.affinity": 2}, "GOMAXPROCS 1, below the host's 2 CPUs"},
		{"a cgroup quota", map[string]float64{"cpus": 2, "cpus.affinity": 2, "cpus.quota": 1.5}, "cgroup's CPU quota of 1.5 cores"},
		{"taskset to one CPU", map[string]float64{"cpus": 1, "cpus.affinity": 1}, "its CPU affinity: 1 of the host's 2 CPUs"},
		{"GOMAXPROCS above the host's CPUs", map[string]float64{"cpus": 3}, "the host's 2 CPUs (GOMAXPROCS 3)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Host: timeline.Host{CPUs: 2}}}
			for i := 1; i <= 5; i++ {
				run.Samples = append(run.Samples,
					timeline.Sample{Source: "host", T: float64(i), Values: map[string]float64{"cpus": 2}},
					timeline.Sample{Source: "firedrill", T: float64(i), Values: tt.values})
			}
			if got := cpuLimit(run, 0, 6); !strings.Contains(got, tt.want) {
				t.Errorf("cpuLimit = %q, want %q in it", got, tt.want)
			}
		})
	}
}

// A kind that tells nothing of its server (Redis): the rule judges by
// firedrill's side alone, its CPU at the cores it may use.
func TestGeneratorLimitedWithoutAServerView(t *testing.T) {
	t.Parallel()
	build := func(cpu float64) *timeline.Run {
		run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Host: timeline.Host{CPUs: 2},
			Workloads: []timeline.WorkloadInfo{{Name: "w", Clients: 8}}}}
		for i := 1; i <= 40; i++ {
			t := float64(i)
			run.Intervals = append(run.Intervals, timeline.Interval{Workload: "w", Start: t - 1, End: t, Clients: 8, Count: 1000})
			run.Samples = append(run.Samples,
				hostSample(t),
				timeline.Sample{Source: "firedrill", T: t, Values: map[string]float64{"cpu": cpu, "cpus": 1, "cpus.affinity": 2, "cpus.online": 2}})
		}
		return run
	}
	fs := GeneratorLimited(GeneratorServer{}).Check(build(0.97))
	if len(fs) != 1 || !strings.Contains(fs[0].Headline, "GOMAXPROCS 1, below the host's 2 CPUs") {
		t.Fatalf("at its cap: %v", fs)
	}
	if fs := GeneratorLimited(GeneratorServer{}).Check(build(0.4)); len(fs) != 0 {
		t.Errorf("well below its cap: %v", fs)
	}
}

// hostSample is a host reading with CPU to spare.
func hostSample(t float64) timeline.Sample {
	return timeline.Sample{Source: "host", T: t, Values: map[string]float64{"cpus": 2, "cpu.idle": 40}}
}
