package mariadbrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"
)

// TestAutoIncLockContention: the openchat joins (INSERT … SELECT … WHERE
// NOT EXISTS, innodb_autoinc_lock_mode = 1) queue on the table's AUTO-INC
// lock under READ COMMITTED and under REPEATABLE READ; with mode 2 (the
// fixed run) nothing waits for it.
func TestAutoIncLockContention(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"openchat-broken", "openchat-repeatable-read"} {
		fs := (autoIncLock{}).Check(openRecording(t, name))
		if len(fs) != 1 {
			t.Fatalf("%s: %d findings, want 1", name, len(fs))
		}
		f := fs[0]
		if f.Severity == diagnose.Info || !strings.Contains(f.Headline, "AUTO-INC table lock contention on firedrill.chat_member") ||
			!strings.Contains(f.Headline, "innodb_autoinc_lock_mode = 1") {
			t.Errorf("%s: %s %q", name, f.Severity, f.Headline)
		}
		text := findingText(f)
		for _, want := range []string{"INSERT … SELECT is a bulk insert", "NOT EXISTS", "innodb_autoinc_lock_mode = 2", "binlog_format = ROW"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the finding does not say %q:\n%s", name, want, text)
			}
		}
	}
	if fs := (autoIncLock{}).Check(openRecording(t, "openchat-fixed")); len(fs) != 0 {
		t.Errorf("openchat-fixed (mode 2): %+v", fs)
	}
}

// TestQueryCacheContention: member counts through the query cache while
// joins invalidate it queue on the cache's lock; with the cache off
// nothing does.
func TestQueryCacheContention(t *testing.T) {
	t.Parallel()
	fs := (queryCacheLock{}).Check(openRecording(t, "openchat-broken"))
	if len(fs) != 1 || fs[0].Severity != diagnose.Warning {
		t.Fatalf("openchat-broken: %+v, want one warning", fs)
	}
	text := findingText(fs[0])
	for _, want := range []string{"Waiting for query cache lock", "dropped because their table changed", "query_cache_type = 0", "counter table"} {
		if !strings.Contains(text, want) {
			t.Errorf("the finding does not say %q:\n%s", want, text)
		}
	}
	if fs := (queryCacheLock{}).Check(openRecording(t, "openchat-fixed")); len(fs) != 0 {
		t.Errorf("openchat-fixed (cache off): %+v", fs)
	}
}

// TestInnoDBGapLockDeadlock: under REPEATABLE READ the joins deadlock on
// the gaps their NOT EXISTS scans lock, and the deadlock rule names that
// (not a lock order); under READ COMMITTED they do not deadlock.
func TestInnoDBGapLockDeadlock(t *testing.T) {
	t.Parallel()
	fs := (deadlock{}).Check(openRecording(t, "openchat-repeatable-read"))
	if len(fs) != 1 || fs[0].Severity != diagnose.Critical {
		t.Fatalf("openchat-repeatable-read: %+v, want one critical finding", fs)
	}
	f := fs[0]
	if !strings.Contains(f.Headline, "gap-lock deadlocks of INSERT … SELECT … WHERE NOT EXISTS under REPEATABLE-READ") {
		t.Errorf("headline %q", f.Headline)
	}
	text := findingText(f)
	for _, want := range []string{"insert intention", "gap lock", "1467", "READ COMMITTED", "Mode 2 removes that part only", "mariadb_global_status:innodb_deadlocks"} {
		if !strings.Contains(text, want) {
			t.Errorf("the finding does not say %q:\n%s", want, text)
		}
	}
	for _, name := range []string{"openchat-broken", "openchat-fixed"} {
		if fs := (deadlock{}).Check(openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s (READ COMMITTED): %+v", name, fs)
		}
	}
}

// findingText is everything a finding says, for checks of its words.
func findingText(f diagnose.Finding) string {
	var b strings.Builder
	b.WriteString(f.Headline + "\n" + f.Mechanism + "\n" + f.Remedy + "\n")
	for _, e := range f.Evidence {
		b.WriteString(e.Series + " " + e.Text + "\n")
	}
	return b.String()
}
