package mariadbrules

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/diagnose/diagnosetest"
)

// TestIdleBlockerFiresOnlyOnItsRecording: the idle holder of a row others
// write fires; the same holder of a row nobody writes, the stock drill's
// hot rows (heads idle only between two statements of a short
// transaction) and every other recording stay silent.
func TestIdleBlockerFiresOnlyOnItsRecording(t *testing.T) {
	t.Parallel()
	for _, name := range diagnosetest.Recordings(t) {
		warned := false
		for _, f := range findingsOf(idleBlocker{}, openRecording(t, name)) {
			warned = warned || f.Severity == diagnose.Warning || f.Severity == diagnose.Critical
		}
		if want := name == "mariadb-idleblock" || name == "mariadb-idleblock-pfs"; warned != want {
			t.Errorf("%s: warned %v, want %v", name, warned, want)
		}
	}
}

// TestIdleBlockerNamesTheHead: the finding names the idle session by
// connection id and program, the row, the 1205 timeouts it caused, the
// KILL remedy, and spans the hold (10–25 s), not the run (0–35 s).
func TestIdleBlockerNamesTheHead(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "mariadb-idleblock")
	fs := findingsOf(idleBlocker{}, run)
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1: %+v", len(fs), fs)
	}
	f := fs[0]
	checkFinding(t, "mariadb-idleblock", idleBlocker{}, f, diagnose.RunEnd(run))
	text := findingText(f)
	for _, want := range []string{"connection 15", "firedrill-event:forgotten-tx", "idle in its transaction", "counter (PRIMARY) key 1",
		"lock wait timeouts (1205)", "KILL 15;", "idle_transaction_timeout", "innodb_lock_wait_timeout (5 s now)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the finding does not say %q:\n%s", want, text)
		}
	}
	if f.Severity != diagnose.Critical {
		t.Errorf("severity %s, want critical: transactions failed with 1205", f.Severity)
	}
	if f.Start < 9 || f.Start > 12 || f.End < 23 || f.End > 27 {
		t.Errorf("window [%.1f, %.1f], want about [10, 25]", f.Start, f.End)
	}
}

// TestIdleBlockerNamesTheLastStatement: with performance_schema on
// (mariadb-idleblock-pfs, the same incident) the idle head is named with
// the statement that took the lock; without it (mariadb-idleblock) the
// finding says that statement is not kept.
func TestIdleBlockerNamesTheLastStatement(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		recording, want, not string
	}{
		{"mariadb-idleblock-pfs", "sat idle in its transaction after `SELECT n FROM counter WHERE id = 1 FOR UPDATE`", "not kept without performance_schema"},
		{"mariadb-idleblock", "its last statement is not kept without performance_schema", "sat idle in its transaction after"},
	} {
		fs := findingsOf(idleBlocker{}, openRecording(t, c.recording))
		if len(fs) != 1 {
			t.Fatalf("%s: got %d findings, want 1", c.recording, len(fs))
		}
		text := findingText(fs[0])
		if !strings.Contains(text, c.want) || strings.Contains(text, c.not) {
			t.Errorf("%s: want %q and not %q in:\n%s", c.recording, c.want, c.not, text)
		}
	}
}
