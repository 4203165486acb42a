package pgrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"
)

// commit: 16 clients, each transaction one UPDATE of a random row of
// 100,000 (nothing to wait for but the commit), synchronous_commit on.

func TestCommitBoundFires(t *testing.T) {
	t.Parallel()
	fs := findingsOf(commitBound{}, openRecording(t, "commit"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Warning || f.Workload != "updates" {
		t.Errorf("severity %s workload %q", f.Severity, f.Workload)
	}
	for _, s := range []string{"Commit-bound", "WAL flush", "on CPU", "commits per flush"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	for _, s := range []string{"batch", "synchronous_commit = off", "commit_delay", "commit_siblings"} {
		if !strings.Contains(f.Remedy, s) {
			t.Errorf("remedy lacks %q: %s", s, f.Remedy)
		}
	}
	var waits, flushes bool
	for _, e := range f.Evidence {
		waits = waits || strings.Contains(e.Text, "LWLock:WALWrite")
		flushes = flushes || e.Series == "wal:wal_sync_per_s"
	}
	if !waits || !flushes {
		t.Errorf("evidence lacks the wait events or the flush rate: %+v", f.Evidence)
	}
}

// TPC-B-like at 4 clients with synchronous_commit on also waits for its
// commits: the nature of the workload, info at most.
func TestCommitBoundQuiet(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"healthy", "guarded", "hotrow", "stock-sorted"} {
		for _, f := range findingsOf(commitBound{}, openRecording(t, name)) {
			if f.Severity != diagnose.Info || !strings.Contains(f.Headline, "not a fault") {
				t.Errorf("%s: %s %s", name, f.Severity, f.Headline)
			}
		}
	}
	// synchronous_commit off, or nothing committing much.
	for _, name := range []string{"multixact-broken", "journal", "journal-drill", "poolsmall"} {
		if fs := findingsOf(commitBound{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %s %s", name, fs[0].Severity, fs[0].Headline)
		}
	}
}

// Select-only readers beside the writers commit nothing that waits for
// the WAL flush: commit-bound counts the writers' transactions alone. On
// commit-readers it used to say 14,533 transactions/s and 15.3 commits
// per flush from pg_stat_database's xact_commit, the readers' included.
func TestCommitBoundCountsWriters(t *testing.T) {
	t.Parallel()
	fs := findingsOf(commitBound{}, openRecording(t, "commit-readers"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if !strings.Contains(f.Headline, "writing transactions/s") || strings.Contains(f.Headline, "14,") {
		t.Errorf("headline counts the readers: %s", f.Headline)
	}
	named := false
	for _, e := range f.Evidence {
		if strings.Contains(e.Text, "commits per flush") && !strings.Contains(e.Text, "writing transactions/s") {
			t.Errorf("commits per flush from every commit: %s", e.Text)
		}
		named = named || strings.Contains(e.Text, "not counted as commits") && strings.Contains(e.Text, "reads")
	}
	if !named {
		t.Errorf("the evidence does not say the readers were left out: %v", f.Evidence)
	}
}
