package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

func TestSubtransactionOverflowFires(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "subtrans")
	fs := findingsOf(subtransactionOverflow{}, run)
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Severity != diagnose.Warning && f.Severity != diagnose.Critical {
		t.Errorf("severity %s, want warning or critical", f.Severity)
	}
	for _, s := range []string{fmt.Sprintf("pid %d", holdEventPID(t, run)), "pg_subtrans", "subtrans.sql", "90 subtransactions"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	if f.Workload != "deep" && f.Workload != "readers" && f.Workload != "writers" {
		t.Errorf("workload %q", f.Workload)
	}
	hasSLRU, hasScript := false, false
	for _, e := range f.Evidence {
		hasSLRU = hasSLRU || strings.HasPrefix(e.Series, "pg_stat_slru:Subtrans.")
		hasScript = hasScript || strings.HasPrefix(e.Series, "script:")
	}
	if !hasSLRU || !hasScript {
		t.Errorf("evidence lacks the Subtrans series or the script: %+v", f.Evidence)
	}
	hold := diagnose.Events(run)[0]
	if f.Start < hold.Start-1 || f.Start > hold.End {
		t.Errorf("window starts at %.0f s, outside the hold [%.0f, %.0f]", f.Start, hold.Start, hold.End)
	}
}

func TestSubtransactionOverflowQuiet(t *testing.T) {
	t.Parallel()
	// multixact-broken: a long transaction and a savepoint, but one per
	// transaction: the subxid cache never overflows.
	for _, name := range []string{"multixact-broken", "multixact-control", "healthy", "generator-limited"} {
		if fs := findingsOf(subtransactionOverflow{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %d findings, want none: %s", name, len(fs), fs[0].Headline)
		}
	}
}

// TestSubtransactionOverflowStatic: a deep script that ran, without any
// server-side sign (no long transaction), is worth an info finding.
func TestSubtransactionOverflowStatic(t *testing.T) {
	t.Parallel()
	commands := []string{`\set a random(1, 1000)`, "BEGIN;"}
	for i := 0; i < 70; i++ {
		commands = append(commands, "SAVEPOINT sp;", "INSERT INTO audit (a) VALUES (:a);", "RELEASE SAVEPOINT sp;")
	}
	commands = append(commands, "COMMIT;")
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1, Workloads: []timeline.WorkloadInfo{
		{Name: "orm", Scripts: []timeline.ScriptInfo{{Name: "orm.sql", Commands: commands}}}}}}
	if fs := findingsOf(subtransactionOverflow{}, run); len(fs) != 0 {
		t.Errorf("the workload never ran: %+v", fs)
	}
	run.Intervals = []timeline.Interval{{Workload: "orm", Start: 0, End: 1, Count: 10}}
	fs := findingsOf(subtransactionOverflow{}, run)
	if len(fs) != 1 || fs[0].Severity != diagnose.Info || !strings.Contains(fs[0].Headline, "70 subtransactions") {
		t.Fatalf("got %+v, want one info finding about 70 subtransactions", fs)
	}
}
