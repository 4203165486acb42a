package pgrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

func TestGeneratorLimitedFires(t *testing.T) {
	t.Parallel()
	// A rate of 30,000/s of a client-heavy script (120 \set per
	// transaction) with GOMAXPROCS=1: firedrill falls seconds behind its
	// schedule while the database's connections sit idle.
	fs := findingsOf(diagnose.GeneratorLimited(generatorServer), openRecording(t, "generator-limited"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	for _, s := range []string{"describe the client, not the database", "flood", "schedule lag", "GOMAXPROCS 1"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	if f.Workload != "flood" || f.Severity != diagnose.Warning {
		t.Errorf("workload %q severity %s", f.Workload, f.Severity)
	}
	if f.End-f.Start < 20 {
		t.Errorf("window [%.0f, %.0f]: the generator was behind for the whole run", f.Start, f.End)
	}
}

func TestGeneratorLimitedQuiet(t *testing.T) {
	t.Parallel()
	// Closed-model runs on a busy 2-core machine: firedrill uses a share
	// of the CPU, other processes take the rest, sessions often wait for
	// the client. None of that makes the generator the bottleneck.
	for _, name := range []string{"healthy", "guarded", "multixact-broken", "multixact-control", "subtrans"} {
		if fs := findingsOf(diagnose.GeneratorLimited(generatorServer), openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %d findings, want none: %s", name, len(fs), fs[0].Headline)
		}
	}
}

// genRun builds a 40 s closed-model run of 8 clients with per-tick client
// and server readings.
func genRun(cpu, gomax, sched, hostIdle, active float64) *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Host: timeline.Host{CPUs: 2},
		Workloads: []timeline.WorkloadInfo{{Name: "w", Clients: 8}}}}
	for i := 1; i <= 40; i++ {
		t := float64(i)
		run.Intervals = append(run.Intervals, timeline.Interval{Workload: "w", Start: t - 1, End: t, Clients: 8, Count: 1000})
		run.Samples = append(run.Samples,
			timeline.Sample{Source: "firedrill", T: t, Values: map[string]float64{"cpu": cpu, "cpus": gomax, "sched_latency_p99_ms": sched}},
			timeline.Sample{Source: "host", T: t, Values: map[string]float64{"cpus": 2, "cpu.idle": hostIdle}},
			timeline.Sample{Source: "pg_stat_activity", T: t, Values: map[string]float64{"aas": active,
				"app.firedrill:w.sessions": 8, "app.firedrill:w.active": active}})
	}
	return run
}

func TestGeneratorLimitedCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                                string
		cpu, gomax, sched, hostIdle, active float64
		want                                bool
	}{
		{"at its GOMAXPROCS, database idle", 0.97, 1, 2, 40, 1, true},
		{"at both cores, database idle", 1.8, 2, 1, 5, 2, true},
		{"a normal closed-model share of a 2-core box", 0.6, 2, 1, 0, 6, false},
		{"at its cap, but the database is busy too", 0.95, 1, 3, 0, 7, false},
		{"scheduler waits with idle CPUs around", 0.3, 2, 40, 60, 1, true},
		{"scheduler waits because others use the host", 0.3, 2, 40, 0, 1, false},
		{"quiet everywhere", 0.1, 2, 0.5, 80, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := findingsOf(diagnose.GeneratorLimited(generatorServer), genRun(tt.cpu, tt.gomax, tt.sched, tt.hostIdle, tt.active))
			if got := len(fs) > 0; got != tt.want {
				t.Errorf("fired = %v, want %v: %+v", got, tt.want, fs)
			}
		})
	}
}

func TestGeneratorLimitedRateBehind(t *testing.T) {
	t.Parallel()
	behind := func(active float64) *timeline.Run {
		run := genRun(0.4, 2, 1, 0, active)
		for i := range run.Intervals {
			iv := &run.Intervals[i]
			iv.Rate, iv.Count, iv.LagMeanUS = 5000, 3000, float64(i+1)*100_000
		}
		return run
	}
	// Behind its rate while the connections wait for the client: fires.
	if fs := findingsOf(diagnose.GeneratorLimited(generatorServer), behind(0)); len(fs) != 1 || !strings.Contains(fs[0].Headline, "schedule lag") {
		t.Errorf("behind, database idle: %+v", fs)
	}
	// Behind because every connection is busy in the database: the
	// database is the limit, not the generator.
	if fs := findingsOf(diagnose.GeneratorLimited(generatorServer), behind(8)); len(fs) != 0 {
		t.Errorf("behind, database busy: %s", fs[0].Headline)
	}
	// Behind because the clients wait for the application's pool, whose
	// connections sit idle in transaction: the pool is the limit.
	pooled := behind(0)
	for i := range pooled.Intervals {
		pooled.Intervals[i].PoolWaitPct.P50 = 300_000
	}
	if fs := findingsOf(diagnose.GeneratorLimited(generatorServer), pooled); len(fs) != 0 {
		t.Errorf("behind, clients waiting for the pool: %s", fs[0].Headline)
	}
	// Behind because the script sleeps 20 ms per transaction: 8 clients
	// carry at most 400/s of that, whatever the generator does.
	sleepy := behind(0)
	sleepy.Summary = &timeline.Summary{Workloads: []timeline.WorkloadSummary{{Name: "w", Scripts: []timeline.ScriptSummary{
		{Name: "s", Commands: []timeline.CommandSummary{{Text: "SELECT 1;", MeanUS: 300}, {Text: `\sleep 20 ms`, MeanUS: 20_000}}}}}}}
	if fs := findingsOf(diagnose.GeneratorLimited(generatorServer), sleepy); len(fs) != 0 {
		t.Errorf("behind, clients sleeping as scripted: %s", fs[0].Headline)
	}
}
