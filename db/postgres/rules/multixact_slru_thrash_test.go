package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

func TestMultixactSLRUThrashFires(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "multixact-broken")
	fs := findingsOf(multixactSLRUThrash{}, run)
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1: %+v", len(fs), fs)
	}
	f := fs[0]
	pid := holdEventPID(t, run)
	// The cause chain: the holder, the cache, the cost, the script.
	for _, s := range []string{fmt.Sprintf("pid %d", pid), "SELECT txid_current()", "MultiXact member cache hit rate fell from",
		"throughput of oltp fell", "multixact.sql", "FOR UPDATE", "SAVEPOINT"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	if f.Severity != diagnose.Critical && f.Severity != diagnose.Warning {
		t.Errorf("severity %s", f.Severity)
	}
	if f.Workload != "oltp" {
		t.Errorf("workload %q, want oltp", f.Workload)
	}
	hold := diagnose.Events(run)[0]
	if f.Start > hold.End || f.End < hold.Start+10 {
		t.Errorf("window [%.0f, %.0f] does not cover the hold [%.0f, %.0f]", f.Start, f.End, hold.Start, hold.End)
	}
	series := map[string]bool{}
	for _, e := range f.Evidence {
		series[strings.SplitN(e.Series, ":", 2)[0]] = true
		if strings.HasPrefix(e.Series, "pg_stat_slru:MultiXact") && strings.HasSuffix(e.Series, "hit_rate") && e.T == 0 {
			t.Errorf("hit-rate evidence without a time: %+v", e)
		}
	}
	for _, s := range []string{"pg_stat_slru", "workload", "script", "pg_stat_activity"} {
		if !series[s] {
			t.Errorf("no %s evidence: %+v", s, f.Evidence)
		}
	}
	if !strings.Contains(f.Remedy, fmt.Sprintf("pg_terminate_backend(%d)", pid)) || !strings.Contains(f.Remedy, "SAVEPOINT") {
		t.Errorf("remedy: %s", f.Remedy)
	}
}

func TestMultixactSLRUThrashQuiet(t *testing.T) {
	t.Parallel()
	// control: the same long transaction, no savepoint (no multixacts);
	// multixact-timeout: the broken script, but the server ends the idle
	// transaction after 5 s (a short blip of the cache, no thrash).
	for _, name := range []string{"multixact-control", "multixact-timeout", "healthy", "subtrans"} {
		if fs := findingsOf(multixactSLRUThrash{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %d findings, want none: %s", name, len(fs), fs[0].Headline)
		}
	}
}

// slruRun builds pg_stat_slru samples for one cache from per-second hits
// and reads; a negative hit count leaves the tick out (a failed tick).
func slruRun(cache string, hits, reads []float64) *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1}}
	for i := range hits {
		if hits[i] < 0 {
			continue
		}
		hr := map[string]float64{}
		if hits[i]+reads[i] > 0 {
			hr[cache+".hit_rate"] = hits[i] / (hits[i] + reads[i])
		}
		hr[cache+".blks_hit_per_s"] = hits[i]
		hr[cache+".blks_read_per_s"] = reads[i]
		run.Samples = append(run.Samples, timeline.Sample{Source: "pg_stat_slru", T: float64(i + 1), Values: hr})
	}
	return run
}

func TestFindSLRUThrash(t *testing.T) {
	t.Parallel()
	// phases builds a series: n seconds of (hits, reads), one after another.
	phases := func(p ...[3]float64) (hits, reads []float64) {
		for _, ph := range p {
			for i := 0; i < int(ph[0]); i++ {
				hits, reads = append(hits, ph[1]), append(reads, ph[2])
			}
		}
		return
	}
	// flushGaps zeroes every other tick: PostgreSQL 15 flushes SLRU
	// counters about once a second, so ticks see double or nothing.
	flushGaps := func(hits, reads []float64) ([]float64, []float64) {
		h, r := append([]float64(nil), hits...), append([]float64(nil), reads...)
		for i := range h {
			if i%2 == 0 {
				h[i], r[i] = 0, 0
			} else {
				h[i], r[i] = 2*h[i], 2*r[i]
			}
		}
		return h, r
	}
	withFailures := func(hits, reads []float64) ([]float64, []float64) {
		h := append([]float64(nil), hits...)
		for i := 3; i < len(h); i += 4 {
			h[i] = -1
		}
		return h, reads
	}
	broken := func() ([]float64, []float64) { return phases([3]float64{20, 10000, 5}, [3]float64{30, 4000, 4000}) }
	tests := []struct {
		name   string
		series func() ([]float64, []float64)
		want   bool
	}{
		{"collapse against its baseline", broken, true},
		{"collapse, with flush gaps", func() ([]float64, []float64) { return flushGaps(broken()) }, true},
		{"collapse, with failed ticks", func() ([]float64, []float64) { return withFailures(broken()) }, true},
		{"steady and healthy", func() ([]float64, []float64) { return phases([3]float64{50, 10000, 5}) }, false},
		{"no access at all", func() ([]float64, []float64) { return phases([3]float64{50, 0, 0}) }, false},
		{"a short blip above half", func() ([]float64, []float64) {
			return phases([3]float64{20, 10000, 5}, [3]float64{4, 3000, 1000}, [3]float64{26, 10000, 5})
		}, false},
		{"a trickle of misses", func() ([]float64, []float64) {
			return phases([3]float64{20, 100, 0}, [3]float64{30, 60, 20})
		}, false},
		{"always bad: no baseline, below half", func() ([]float64, []float64) { return phases([3]float64{50, 1000, 3000}) }, true},
		{"always mediocre: no baseline, above half", func() ([]float64, []float64) { return phases([3]float64{50, 3000, 1000}) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hits, reads := tt.series()
			th, got := findSLRUThrash(slruRun("MultiXactMember", hits, reads), "MultiXactMember", defaultSLRUThresholds)
			if got != tt.want {
				t.Errorf("thrash = %v, want %v (%+v)", got, tt.want, th)
			}
			if got && th.HasBaseline && (th.Onset < 15 || th.Onset > 25) {
				t.Errorf("onset %.0f s, want near 20 s", th.Onset)
			}
		})
	}
}
