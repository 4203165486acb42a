package diagnose

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend/mariadb/mariadbmetric"
)

// mariadb-commit: 16 clients of one-row autocommit UPDATEs on an embedded
// MariaDB with innodb_flush_log_at_trx_commit = 1, every fsync of the
// server 5 ms slower (disk_pressure, mode slow).

func TestCommitBoundMariaDBFires(t *testing.T) {
	t.Parallel()
	fs := findingsOf(commitBound{}, openRecording(t, "mariadb-commit"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != Warning || f.Workload != "updates" {
		t.Errorf("severity %s workload %q", f.Severity, f.Workload)
	}
	for _, s := range []string{"Commit-bound", "redo-log flush", "innodb_flush_log_at_trx_commit = 1", "commits per flush"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	for _, s := range []string{"batch", "innodb_flush_log_at_trx_commit = 2", "about a second", "device"} {
		if !strings.Contains(f.Remedy, s) {
			t.Errorf("remedy lacks %q: %s", s, f.Remedy)
		}
	}
	want := map[string]string{
		"states":    "\"Updating status\"",
		"fsyncs":    "commits per flush",
		"rows":      "small writes",
		"latency":   "flush intervals",
		"slow disk": "slow-log-device",
		"settings":  "innodb_flush_log_at_trx_commit = 1",
	}
	for what, s := range want {
		found := false
		for _, e := range f.Evidence {
			found = found || strings.Contains(e.Text, s)
		}
		if !found {
			t.Errorf("evidence lacks the %s (%q): %+v", what, s, f.Evidence)
		}
	}
	if f.Evidence[0].Series != mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.State("Updating status")+"+"+mariadbmetric.State("Commit")) || f.Evidence[0].Value < 0.9 {
		t.Errorf("first evidence %+v: want the commit states' share of active sessions, over 90 %% in this run", f.Evidence[0])
	}
}

// The same load batched 20 rows per transaction still waits for its
// flushes, but each one carries 20 rows: info at most. With
// innodb_flush_log_at_trx_commit = 2 nothing waits for a flush at all.
// The MariaDB recordings of other incidents commit on this machine's disk
// too: info at most, never a warning that would hide their own finding.
func TestCommitBoundMariaDBQuiet(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"mariadb-commit-batched", "stock-mariadb-broken", "stock-mariadb-fixed-2"} {
		fs := findingsOf(commitBound{}, openRecording(t, name))
		for _, f := range fs {
			if f.Severity != Info || !strings.Contains(f.Headline, "not a fault") {
				t.Errorf("%s: %s %s", name, f.Severity, f.Headline)
			}
		}
		if name == "mariadb-commit-batched" && (len(fs) != 1 || !strings.Contains(fs[0].Headline, "rows per transaction")) {
			t.Errorf("%s: want one info finding naming the rows per transaction, got %+v", name, fs)
		}
	}
	for _, name := range []string{"mariadb-commit-flush2", "openchat-broken", "openchat-fixed"} {
		if fs := findingsOf(commitBound{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %s %s", name, fs[0].Severity, fs[0].Headline)
		}
	}
}
