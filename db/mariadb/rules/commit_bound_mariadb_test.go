package mariadbrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/timeline"
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
	if f.Severity != diagnose.Warning || f.Workload != "updates" {
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
			if f.Severity != diagnose.Info || !strings.Contains(f.Headline, "not a fault") {
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

// TestCommitBoundMariaDBSettings reads mariadb-commit as if the server
// had run with other settings (a copy of the run with its manifest's
// settings changed): innodb_flush_log_at_trx_commit 0 or 2 never waits
// for a flush at commit, so nothing is said; with the binary log on the
// remedy turns to its group commit, and to sync_binlog when it is 1.
func TestCommitBoundMariaDBSettings(t *testing.T) {
	t.Parallel()
	recorded := openRecording(t, "mariadb-commit")
	with := func(settings map[string]string) []diagnose.Finding {
		run := *recorded
		run.Manifest.Settings = maps.Clone(recorded.Manifest.Settings)
		maps.Copy(run.Manifest.Settings, settings)
		return findingsOf(commitBound{}, &run)
	}
	for _, flush := range []string{"0", "2"} {
		if fs := with(map[string]string{"innodb_flush_log_at_trx_commit": flush}); len(fs) != 0 {
			t.Errorf("flush at commit %s: %s", flush, fs[0].Headline)
		}
	}
	// 3 is MariaDB's older spelling of 1 (sync at commit, group commit):
	// the finding stands and names the value the server had.
	if fs := with(map[string]string{"innodb_flush_log_at_trx_commit": "3"}); len(fs) != 1 {
		t.Errorf("flush at commit 3: %d findings, want 1", len(fs))
	} else if !strings.Contains(fs[0].Headline, "innodb_flush_log_at_trx_commit = 3") || strings.Contains(fs[0].Headline, "= 1") {
		t.Errorf("flush at commit 3: headline names another value: %s", fs[0].Headline)
	}
	cases := []struct {
		settings map[string]string
		want     []string // in the remedy
		not      []string
	}{
		// No binary log: InnoDB groups commits by itself.
		{map[string]string{"log_bin": "OFF"}, []string{"no group-commit wait to tune"}, []string{"binlog_commit_wait_count"}},
		// Binary log, not synced per group.
		{map[string]string{"log_bin": "ON", "sync_binlog": "0"}, []string{"binlog_commit_wait_count", "binlog_commit_wait_usec"}, []string{"sync_binlog = 1"}},
		// Binary log synced per group: a second sync per commit group.
		{map[string]string{"log_bin": "ON", "sync_binlog": "1"}, []string{"binlog_commit_wait_count", "sync_binlog = 1"}, nil},
	}
	for _, c := range cases {
		fs := with(c.settings)
		if len(fs) != 1 {
			t.Fatalf("%v: %d findings", c.settings, len(fs))
		}
		for _, s := range c.want {
			if !strings.Contains(fs[0].Remedy, s) {
				t.Errorf("%v: remedy lacks %q: %s", c.settings, s, fs[0].Remedy)
			}
		}
		for _, s := range c.not {
			if strings.Contains(fs[0].Remedy, s) {
				t.Errorf("%v: remedy has %q: %s", c.settings, s, fs[0].Remedy)
			}
		}
	}
}

// mariadb-commit-ramp: the same writers held at 2, 4, 8 and 16 clients.
// With group commit the transactions/s grow with the clients while the
// flush rate stays put: the evidence says so with both ends' figures.
func TestCommitBoundMariaDBRamp(t *testing.T) {
	t.Parallel()
	fs := findingsOf(commitBound{}, openRecording(t, "mariadb-commit-ramp"))
	if len(fs) != 1 || fs[0].Severity != diagnose.Warning {
		t.Fatalf("want one warning, got %+v", fs)
	}
	var scaling *diagnose.Evidence
	for i, e := range fs[0].Evidence {
		if strings.HasPrefix(e.Text, "from 2 to 16 clients") {
			scaling = &fs[0].Evidence[i]
		}
	}
	if scaling == nil {
		t.Fatalf("no evidence of the ramp: %+v", fs[0].Evidence)
	}
	// The flush rate at 16 clients is within a factor of 2 of that at 2
	// clients (the device's pace), though the clients are 8 times as many.
	if scaling.Value < 0.5 || scaling.Value > 2 || !strings.Contains(scaling.Text, "commits per flush") {
		t.Errorf("ramp evidence: %+v", *scaling)
	}
	// mariadb-commit holds 16 clients throughout: nothing to compare.
	for _, e := range findingsOf(commitBound{}, openRecording(t, "mariadb-commit"))[0].Evidence {
		if strings.HasPrefix(e.Text, "from ") {
			t.Errorf("ramp evidence on a run without a ramp: %s", e.Text)
		}
	}
}

// TestCommitBoundMariaDBSettingsEvent reads mariadb-commit as if a
// settings event had set innodb_flush_log_at_trx_commit = 2 at 12 s (a
// snapshot of the variables then, as the runner records one): the
// finding covers only the 12 s before it. Set back to 1 at 16 s, the
// longer span still wins.
func TestCommitBoundMariaDBSettingsEvent(t *testing.T) {
	t.Parallel()
	recorded := openRecording(t, "mariadb-commit")
	with := func(changes ...timeline.Sample) *timeline.Run {
		run := *recorded
		run.Samples = append(slices.Clone(recorded.Samples), changes...)
		return &run
	}
	snapshot := func(t float64, flush string) timeline.Sample {
		return timeline.Sample{Source: mariadbmetric.Settings, T: t, Detail: []byte(`{"innodb_flush_log_at_trx_commit":"` + flush + `"}`)}
	}
	for _, c := range []struct {
		changes  []timeline.Sample
		from, to float64
	}{
		{[]timeline.Sample{snapshot(12, "2")}, 0, 12},
		{[]timeline.Sample{snapshot(12, "2"), snapshot(16, "1")}, 0, 12},
		{[]timeline.Sample{snapshot(4, "2"), snapshot(6, "1")}, 6, 20},
	} {
		fs := findingsOf(commitBound{}, with(c.changes...))
		if len(fs) != 1 {
			t.Fatalf("%d findings", len(fs))
		}
		if math.Abs(fs[0].Start-c.from) > 0.1 || math.Abs(fs[0].End-c.to) > 0.1 {
			t.Errorf("changes %v: finding %.1f–%.1f s, want %.0f–%.0f s", c.changes, fs[0].Start, fs[0].End, c.from, c.to)
		}
	}
	if fs := findingsOf(commitBound{}, with(snapshot(1, "2"))); len(fs) != 0 {
		t.Errorf("flush at commit 2 from 1 s: %s", fs[0].Headline)
	}
}

// mariadb-commit-binlog: the same writers with log_bin and sync_binlog =
// 1. The sessions wait in "Commit"; the evidence has the binary log's
// group commits and the remedy its group-commit wait.
func TestCommitBoundMariaDBBinlog(t *testing.T) {
	t.Parallel()
	fs := findingsOf(commitBound{}, openRecording(t, "mariadb-commit-binlog"))
	if len(fs) != 1 || fs[0].Severity != diagnose.Warning {
		t.Fatalf("want one warning, got %+v", fs)
	}
	f := fs[0]
	var groups bool
	for _, e := range f.Evidence {
		groups = groups || (e.Series == mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.BinlogGroupsPerS) && strings.Contains(e.Text, "per group (sync_binlog = 1)"))
	}
	if !groups || !strings.Contains(f.Evidence[0].Text, "\"Commit\"") {
		t.Errorf("evidence lacks the commit state or the binary log's groups: %+v", f.Evidence)
	}
	for _, s := range []string{"binlog_commit_wait_count", "binlog_commit_wait_usec", "sync_binlog = 1"} {
		if !strings.Contains(f.Remedy, s) {
			t.Errorf("remedy lacks %q: %s", s, f.Remedy)
		}
	}
	if !strings.Contains(f.Mechanism, "sync_binlog = 1") {
		t.Errorf("mechanism: %s", f.Mechanism)
	}
}

// A SELECT-only workload beside the writers commits nothing to the redo
// log: commit-bound counts the writers' transactions alone, and two
// workloads of different client counts are not a scaling series. On
// mariadb-commit-readers (16 writers, 4 readers) it used to say 24,500
// transactions/s, 171 commits per flush, 0.047 rows written per
// transaction and "from 4 to 16 clients".
func TestCommitBoundMariaDBCountsWriters(t *testing.T) {
	t.Parallel()
	fs := findingsOf(commitBound{}, openRecording(t, "mariadb-commit-readers"))
	if len(fs) != 1 || fs[0].Severity != diagnose.Warning {
		t.Fatalf("got %v, want one warning", fs)
	}
	f := fs[0]
	if !strings.Contains(f.Headline, "writing transactions/s") || strings.Contains(f.Headline, "24,") {
		t.Errorf("headline counts the readers: %s", f.Headline)
	}
	var perFlush, rows, readers, scaling bool
	for _, e := range f.Evidence {
		switch {
		case strings.Contains(e.Text, "commits per flush (group commit)"):
			perFlush = e.Value > 100 && e.Value < 200 // the flushes: ~143/s
			if !strings.Contains(e.Text, "for 1,1") {
				t.Errorf("commits per flush from more than the writers: %s", e.Text)
			}
		case strings.Contains(e.Text, "written per transaction"):
			rows = e.Value > 0.9 && e.Value < 1.5
		case strings.Contains(e.Text, "not counted as commits") && strings.Contains(e.Text, "reads"):
			readers = true
		case strings.Contains(e.Text, "clients:"):
			scaling = true
		}
	}
	if !perFlush || !rows || !readers {
		t.Errorf("evidence: commits per flush %v, ~1 row per transaction %v, readers named %v: %v", perFlush, rows, readers, f.Evidence)
	}
	if scaling {
		t.Errorf("the readers' 4 clients and the writers' 16 compared as a scaling series: %v", f.Evidence)
	}
}
