package pgrules

import (
	"encoding/json"
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// firesOnlyOn holds a rule to warning on the recordings of its incident
// and on no other recording.
func firesOnlyOn(t *testing.T, r diagnose.Rule, incidents ...string) {
	t.Helper()
	for _, name := range recordings(t) {
		warned := false
		for _, f := range findingsOf(r, openRecording(t, name)) {
			warned = warned || f.Severity == diagnose.Warning || f.Severity == diagnose.Critical
		}
		want := false
		for _, n := range incidents {
			want = want || n == name
		}
		if warned != want {
			t.Errorf("%s on %s: warned %v, want %v", r.ID(), name, warned, want)
		}
	}
}

func TestCheckpointPressureFiresOnlyOnItsRecording(t *testing.T) {
	t.Parallel()
	firesOnlyOn(t, checkpointPressure{}, "checkpoints")
}

func TestCheckpointPressureSizesMaxWALSizeFromTheRate(t *testing.T) {
	t.Parallel()
	fs := findingsOf(checkpointPressure{}, openRecording(t, "checkpoints"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	// The ingest workload starts at 10 s and runs to the end.
	if f.Start < 9 || f.Start > 12 || f.End < 28 {
		t.Errorf("window [%.1f, %.1f], want from about 10 s to the end", f.Start, f.End)
	}
	for _, s := range []string{"max_wal_size 32MB", "checkpoint_warning is 30 s", "MiB/s of WAL"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	// 26.6 MiB/s × 300 s × 1.9 ≈ 15 GB; at least × 30 s × 1.9 ≈ 1.5 GB.
	for _, s := range []string{"Raise max_wal_size to 15GB", "at the very least 2GB", "ALTER SYSTEM SET max_wal_size = '15GB'"} {
		if !strings.Contains(f.Remedy, s) {
			t.Errorf("remedy lacks %q: %s", s, f.Remedy)
		}
	}
}

// syntheticCheckpoints is a run whose wal samples request a checkpoint
// at each of at, with walRate bytes/s throughout.
func syntheticCheckpoints(walRate float64, maxWAL string, at ...float64) *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Settings: map[string]string{"max_wal_size": maxWAL}}}
	for t := 0; t <= 60; t++ {
		req := 0.0
		for _, a := range at {
			if a == float64(t) {
				req++
			}
		}
		run.Samples = append(run.Samples, timeline.Sample{Source: "wal", T: float64(t),
			Values: map[string]float64{"wal_bytes_per_s": walRate, "checkpoints_req": req, "checkpoints_timed": 0}})
	}
	return run
}

func TestCheckpointPressureThresholds(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	tests := []struct {
		name string
		run  *timeline.Run
		want int
	}{
		// Two CHECKPOINT commands on a quiet server: requested, but not by WAL volume.
		{"manual checkpoints", syntheticCheckpoints(0.1*mb, "1GB", 10, 20), 0},
		// At 1 MB/s, 1GB of max_wal_size lasts far longer than 30 s.
		{"slow WAL", syntheticCheckpoints(1*mb, "1GB", 10, 20), 0},
		// 40 s apart: further than checkpoint_warning.
		{"far apart", syntheticCheckpoints(30*mb, "32MB", 10, 50), 0},
		// One requested checkpoint is no pressure yet.
		{"one", syntheticCheckpoints(30*mb, "32MB", 10), 0},
		{"pressure", syntheticCheckpoints(30*mb, "32MB", 10, 12, 14), 1},
	}
	for _, tt := range tests {
		if got := len(findingsOf(checkpointPressure{}, tt.run)); got != tt.want {
			t.Errorf("%s: %d findings, want %d", tt.name, got, tt.want)
		}
	}
	// A settings event that raised max_wal_size before the burst: no pressure.
	raised := syntheticCheckpoints(30*mb, "32MB", 10, 12, 14)
	detail, _ := json.Marshal(map[string]string{"max_wal_size": "64GB"})
	raised.Samples = append(raised.Samples, timeline.Sample{Source: "pg_settings", T: 5, Detail: detail})
	if fs := findingsOf(checkpointPressure{}, raised); len(fs) != 0 {
		t.Errorf("max_wal_size raised to 64GB at 5 s: got %s", fs[0].Headline)
	}
}

func TestPGSettingUnits(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		text  string
		bytes float64
		ok    bool
	}{{"32MB", 32 << 20, true}, {"1GB", 1 << 30, true}, {"64kB", 64 << 10, true}, {"2048", 2048 << 20, true}, {"-1", 0, false}, {"on", 0, false}} {
		if got, ok := pgBytes(tt.text, 1<<20); ok != tt.ok || got != tt.bytes {
			t.Errorf("pgBytes(%q) = %v, %v; want %v, %v", tt.text, got, ok, tt.bytes, tt.ok)
		}
	}
	for _, tt := range []struct {
		text string
		s    float64
	}{{"5min", 300}, {"30s", 30}, {"1h", 3600}, {"200ms", 0.2}} {
		if got, ok := pgSeconds(tt.text, 1); !ok || got != tt.s {
			t.Errorf("pgSeconds(%q) = %v, %v; want %v", tt.text, got, ok, tt.s)
		}
	}
	if got := pgSize(15.2 * (1 << 30)); got != "16GB" {
		t.Errorf("pgSize(15.2 GiB) = %s, want 16GB", got)
	}
}
