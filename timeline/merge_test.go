package timeline

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// writeShard writes a finished shard's run directory with one workload's
// intervals (latencies recorded into each) and its summary.
func writeShard(t testing.TB, dir string, index, count int, run string, ivs []Interval, lat map[float64][]int64) {
	t.Helper()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	total := NewHistogram()
	var n int64
	for i := range ivs {
		h := NewHistogram()
		for _, us := range lat[ivs[i].End] {
			h.Record(us)
		}
		ivs[i].Latency, ivs[i].LatencyPct = h, h.Percentiles()
		total.Merge(h)
		n += ivs[i].Count
		w.Add(Record{Interval: &ivs[i]})
	}
	if index == 0 {
		w.Add(Record{Sample: &Sample{Source: "pg_stat_activity", T: 0.5, Values: map[string]float64{"active": 3}}})
		w.Add(Record{Mark: &Mark{T: 0.7, Event: "poke", Kind: "sql", Phase: PhaseStart}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	man := Manifest{Format: Format, Name: "s", Status: StatusCompleted, Interval: 0.5, Started: time.Now(), Ended: time.Now(),
		Workloads: []WorkloadInfo{{Name: "w", Clients: 2, Rate: 50}},
		Shard:     &ShardInfo{Index: index, Count: count, Run: run}}
	if err := WriteJSON(dir, ManifestFile, &man); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(dir, ScenarioFile, []byte("name: s\n")); err != nil {
		t.Fatal(err)
	}
	sum := &Summary{Duration: 1, Workloads: []WorkloadSummary{{Name: "w", Duration: 1, Count: n, Latency: total, LatencyPct: total.Percentiles(),
		Scripts: []ScriptSummary{{Name: "x", Count: n, Latency: total.Clone(), Commands: []CommandSummary{{Line: 1, Count: n, MeanUS: 100}}}},
		Errors:  []ErrorSummary{{Code: "40001", Message: "shard " + string(rune('0'+index)), Count: 1, First: float64(index) / 10}}}}}
	if err := WriteSummary(dir, sum); err != nil {
		t.Fatal(err)
	}
}

// Two shards' intervals of the same tick (their clocks a few ms apart)
// become one: counts and errors summed, histograms merged exactly; the
// summary likewise; shard 0's samples and marks kept.
func TestMergeAddsShardsUp(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	const run = "s@2026-11-25T07:00:00Z/2"
	s0, s1 := filepath.Join(tmp, "s0"), filepath.Join(tmp, "s1")
	writeShard(t, s0, 0, 2, run, []Interval{
		{Workload: "w", Start: 0, End: 0.5, Clients: 1, Rate: 25, Count: 3, Errors: map[string]int64{"40001": 1}, LagMaxUS: 10, LagMeanUS: 4},
		{Workload: "w", Start: 0.5, End: 1.0, Clients: 1, Rate: 25, Count: 2},
	}, map[float64][]int64{0.5: {100, 200, 300}, 1.0: {400, 500}})
	writeShard(t, s1, 1, 2, run, []Interval{
		{Workload: "w", Start: 0.003, End: 0.503, Clients: 1, Rate: 25, Count: 1, Errors: map[string]int64{"40001": 2, "23505": 1}, LagMaxUS: 30, LagMeanUS: 8},
		{Workload: "w", Start: 0.503, End: 1.003, Clients: 1, Rate: 25, Count: 4},
	}, map[float64][]int64{0.503: {1000}, 1.003: {10, 20, 30, 40_000}})

	r, err := Merge([]string{s1, s0}, filepath.Join(tmp, "m")) // any order
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != 2 {
		t.Fatalf("%d merged intervals, want 2: %+v", len(r.Intervals), r.Intervals)
	}
	first, second := r.Intervals[0], r.Intervals[1]
	if first.Count != 4 || first.Clients != 2 || first.Rate != 50 || first.Errors["40001"] != 3 || first.Errors["23505"] != 1 ||
		first.LagMaxUS != 30 || first.LagMeanUS != 5 || first.Start != 0 || first.End != 0.503 {
		t.Errorf("first tick: %+v", first)
	}
	if first.Latency.Count() != 4 || first.LatencyPct.Max != first.Latency.Max() || first.Latency.Max() < 999 || first.Latency.Max() > 1001 {
		t.Errorf("first tick's histogram: %d values, max %d, pct %+v", first.Latency.Count(), first.Latency.Max(), first.LatencyPct)
	}
	if second.Count != 6 || second.Latency.Count() != 6 || second.LatencyPct.P50 != 30 || second.LatencyPct.Max < 39_960 || second.LatencyPct.Max > 40_040 {
		t.Errorf("second tick: n %d, histogram %d, pct %+v (want p50 30 µs, max 40 ms: 10 20 30 400 500 40000)", second.Count, second.Latency.Count(), second.LatencyPct)
	}
	ws := r.Summary.Workloads[0]
	if ws.Count != 10 || ws.Latency.Count() != 10 || ws.TPS != 10 || len(ws.Errors) != 1 || ws.Errors[0].Count != 2 || ws.Errors[0].Message != "shard 0" {
		t.Errorf("summary: %+v", ws)
	}
	if c := ws.Scripts[0].Commands[0]; c.Count != 10 || c.MeanUS != 100 {
		t.Errorf("command: %+v", c)
	}
	if len(r.Samples) != 1 || len(r.Marks) != 1 {
		t.Errorf("%d samples and %d marks, want shard 0's 1 and 1", len(r.Samples), len(r.Marks))
	}
	m := r.Manifest
	if m.Workloads[0].Clients != 4 || m.Workloads[0].Rate != 100 || m.Shard == nil || len(m.Shard.Merged) != 2 || m.Process != nil {
		t.Errorf("manifest: workloads %+v, shard %+v", m.Workloads, m.Shard)
	}
}

// What merge refuses, each with a message that names it.
func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	shard := func(name string, index, count int, run string) string {
		dir := filepath.Join(tmp, name)
		writeShard(t, dir, index, count, run, []Interval{{Workload: "w", End: 0.5, Count: 1}}, map[float64][]int64{0.5: {100}})
		return dir
	}
	const run = "s@2026-11-25T07:00:00Z/3"
	a, b, c := shard("a", 0, 3, run), shard("b", 1, 3, run), shard("c", 2, 3, run)
	other := shard("other", 2, 3, "s@2026-11-25T08:00:00Z/3")
	dup := shard("dup", 1, 3, run)
	b2 := filepath.Join(tmp, "b2")
	writeShard(t, b2, 1, 3, run, nil, nil)
	if err := os.WriteFile(filepath.Join(b2, ScenarioFile), []byte("name: s\nduration: 2s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nonEmpty := filepath.Join(tmp, "full")
	os.MkdirAll(nonEmpty, 0o700)
	os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o600)
	for _, tc := range []struct {
		name string
		dirs []string
		out  string
		want string
	}{
		{"missing shard", []string{a, c}, "", "shard 1/3 of run"},
		{"another run", []string{a, b, other}, "", "merge the shards of one run"},
		{"twice", []string{a, b, dup, c}, "", "are both shard 1/3"},
		{"different scenario", []string{a, b2, c}, "", "ran different scenarios"},
		{"not a run", []string{tmp}, "", "not a firedrill run directory"},
		{"out not empty", []string{a, b, c}, nonEmpty, "exists and is not empty"},
	} {
		out := tc.out
		if out == "" {
			out = filepath.Join(tmp, "out-"+strings.ReplaceAll(tc.name, " ", "-"))
		}
		if _, err := Merge(tc.dirs, out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// An hour of one-second ticks from 4 shards: how long merge takes and how
// much it allocates (each tick's histograms are decoded, merged and
// encoded again; none is kept decoded).
//
//	go test -run '^$' -bench BenchmarkMergeHour -benchmem ./timeline/
func BenchmarkMergeHour(b *testing.B) {
	tmp := b.TempDir()
	const run = "s@2026-11-25T07:00:00Z/4"
	var dirs []string
	for i := range 4 {
		var ivs []Interval
		lat := map[float64][]int64{}
		for s := 1; s <= 3600; s++ {
			end := float64(s) + float64(i)/1000
			ivs = append(ivs, Interval{Workload: "w", Start: end - 1, End: end, Count: 100})
			for v := range 100 {
				lat[end] = append(lat[end], int64(200+v*37+s%50))
			}
		}
		dir := filepath.Join(tmp, fmt.Sprint(i))
		writeShard(b, dir, i, 4, run, ivs, lat)
		dirs = append(dirs, dir)
	}
	// The peak resident memory of the merges alone (Linux): the shards'
	// writing let go, the high-water mark reset.
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		r, err := Merge(dirs, filepath.Join(tmp, fmt.Sprintf("m%d", n)))
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Intervals) != 3600 || r.Summary.Workloads[0].Count != 4*3600*100 {
			b.Fatalf("%d intervals, %d transactions", len(r.Intervals), r.Summary.Workloads[0].Count)
		}
	}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			var kb float64
			if _, err := fmt.Sscanf(line, "VmHWM: %f kB", &kb); err == nil {
				b.ReportMetric(kb/1024, "peak-MB")
			}
		}
	}
}

// A shard that began its load late has its ticks counted from --start-at:
// its interval that ended 0.2 s into its own load ended 0.5 s after the
// start, in the other shard's tick.
func TestMergePutsALateShardOnTheCommonClock(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	const run = "s@2026-11-25T07:00:00Z/2"
	startAt := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	s0, s1 := filepath.Join(tmp, "s0"), filepath.Join(tmp, "s1")
	writeShard(t, s0, 0, 2, run, []Interval{{Workload: "w", End: 0.5, Count: 1}, {Workload: "w", Start: 0.5, End: 1, Count: 1}}, map[float64][]int64{0.5: {100}, 1: {100}})
	writeShard(t, s1, 1, 2, run, []Interval{{Workload: "w", End: 0.2, Count: 2}, {Workload: "w", Start: 0.2, End: 0.7, Count: 2}}, map[float64][]int64{0.2: {100}, 0.7: {100}})
	for i, dir := range []string{s0, s1} {
		r, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		r.Manifest.Shard.StartAt = startAt
		r.Manifest.Shard.Began = startAt.Add(time.Duration(i) * 300 * time.Millisecond)
		if err := WriteJSON(dir, ManifestFile, &r.Manifest); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Merge([]string{s0, s1}, filepath.Join(tmp, "m"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Intervals) != 2 || r.Intervals[0].Count != 3 || r.Intervals[1].Count != 3 || r.Intervals[1].End != 1 {
		t.Errorf("merged intervals: %+v", r.Intervals)
	}
}
