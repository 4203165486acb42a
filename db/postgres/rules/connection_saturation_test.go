package pgrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// journal: 16 clients over a pool of 5, each query a 150,000-row scan;
// poolsmall: 200 transactions/s over a pool of 3, a 0.05 ms lookup and
// 20 ms of application work per transaction while the connection is held.

// journal-drill: the drill's page query at 40 pages/s (open model)
// through a pool of 5.
func TestConnectionSaturationSlowQueries(t *testing.T) {
	t.Parallel()
	for name, workload := range map[string]string{"journal": "feed", "journal-drill": "pages"} {
		fs := findingsOf(connectionSaturation{}, openRecording(t, name))
		if len(fs) != 1 {
			t.Fatalf("%s: got %d findings, want 1", name, len(fs))
		}
		f := fs[0]
		if f.Severity != diagnose.Warning || f.Workload != workload {
			t.Errorf("%s: severity %s workload %q", name, f.Severity, f.Workload)
		}
		for _, s := range []string{"Pool of 5", "slow queries", "executing in the database", "a bigger pool is not a fix"} {
			if !strings.Contains(f.Headline, s) {
				t.Errorf("%s: headline lacks %q: %s", name, s, f.Headline)
			}
		}
		if !strings.Contains(f.Remedy, "queries fast first") {
			t.Errorf("%s: remedy: %s", name, f.Remedy)
		}
	}
}

func TestConnectionSaturationCapacity(t *testing.T) {
	t.Parallel()
	fs := findingsOf(connectionSaturation{}, openRecording(t, "poolsmall"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Warning || f.Workload != "api" {
		t.Errorf("severity %s workload %q", f.Severity, f.Workload)
	}
	for _, s := range []string{"Pool of 3 too small", "queries are quick", "Little's law: 200/s ×", "connections needed"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	if !strings.Contains(f.Remedy, "Grow the pool to at least") {
		t.Errorf("remedy: %s", f.Remedy)
	}
}

// The index built mid-run ends the pool waits: info, resolved.
func TestConnectionSaturationResolved(t *testing.T) {
	t.Parallel()
	fs := findingsOf(connectionSaturation{}, openRecording(t, "journal-fixed"))
	if len(fs) != 1 || fs[0].Severity != diagnose.Info || !strings.HasPrefix(fs[0].Headline, "Resolved at") || fs[0].End > 35 {
		t.Fatalf("%+v", fs)
	}
}

func TestConnectionSaturationQuiet(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"healthy", "guarded", "commit", "hotrow", "stock-deadlock"} {
		if fs := findingsOf(connectionSaturation{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %s %s", name, fs[0].Severity, fs[0].Headline)
		}
	}
}

// The server's own limit: connections at max_connections − reserved, and
// clients refused with 53300.
func TestConnectionSaturationServerLimit(t *testing.T) {
	t.Parallel()
	run := &timeline.Run{Manifest: timeline.Manifest{Format: timeline.Format, Interval: 1,
		Settings: map[string]string{"max_connections": "25"}}}
	for i := 1; i <= 10; i++ {
		t := float64(i)
		conns := 10.0
		if i >= 5 {
			conns = 22
		}
		run.Samples = append(run.Samples,
			timeline.Sample{Source: "pg_stat_activity", T: t, Values: map[string]float64{"aas": 2, "connections_total": conns}},
			timeline.Sample{Source: "pg_stat_database", T: t, Values: map[string]float64{"max_connections": 25, "superuser_reserved_connections": 3}})
		iv := timeline.Interval{Workload: "api", Start: t - 1, End: t, Count: 100}
		if i >= 6 {
			iv.Errors = map[string]int64{"53300": 4}
		}
		run.Intervals = append(run.Intervals, iv)
	}
	fs := findingsOf(connectionSaturation{}, run)
	if len(fs) != 1 {
		t.Fatalf("got %d findings", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Critical || f.Workload != "api" || !strings.Contains(f.Headline, "refused 20 connections") {
		t.Errorf("%s %q %s", f.Severity, f.Workload, f.Headline)
	}
	checkFinding(t, "server limit", connectionSaturation{}, f, diagnose.RunEnd(run))
}
