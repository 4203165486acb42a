package diagnose

import (
	"slices"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

func TestWritingTPS(t *testing.T) {
	t.Parallel()
	script := func(commands ...string) []timeline.ScriptInfo {
		return []timeline.ScriptInfo{{Name: "s.sql", Weight: 1, Commands: commands}}
	}
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Workloads: []timeline.WorkloadInfo{
		{Name: "updates", Scripts: script(`\set id random(1, 10)`, "UPDATE kv SET v = v + 1 WHERE k = :id;")},
		{Name: "reads", Scripts: script(`\set id random(1, 10)`, "SELECT v FROM kv WHERE k = :id;")},
		{Name: "lockers", Scripts: script("BEGIN;", "SELECT v FROM kv WHERE k = 1 FOR UPDATE;", "COMMIT;")},
		{Name: "old"}, // recorded without its commands: counted
	}}}
	for i := 1; i <= 10; i++ {
		for w, n := range map[string]int64{"updates": 100, "reads": 10000, "lockers": 10, "old": 1} {
			run.Intervals = append(run.Intervals, timeline.Interval{Workload: w, Start: float64(i - 1), End: float64(i), Count: n})
		}
	}
	if got := WritingTPS(run, 0, 10); got != 111 {
		t.Errorf("WritingTPS = %v, want 111: the readers' 10,000/s left out", got)
	}
	if got := TotalTPS(run, 0, 10); got != 10111 {
		t.Errorf("TotalTPS = %v, want 10111", got)
	}
	if got := ReadOnlyWorkloads(run); !slices.Equal(got, []string{"reads"}) {
		t.Errorf("ReadOnlyWorkloads = %v", got)
	}
}
