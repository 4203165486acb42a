package pgrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"
)

// hotrow: 16 clients, every transaction updates the same counter row
// (id = 1) and inserts an order, synchronous_commit on.

func TestLockContentionFires(t *testing.T) {
	t.Parallel()
	fs := findingsOf(lockContention{}, openRecording(t, "hotrow"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Warning || f.Workload != "orders" {
		t.Errorf("severity %s workload %q", f.Severity, f.Workload)
	}
	for _, s := range []string{"queue for locks", "of active time", "UPDATE counter", "same row (1)", "chain heads"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	series := map[string]bool{}
	for _, e := range f.Evidence {
		series[e.Series] = true
	}
	for _, s := range []string{"pg_stat_activity:wait.Lock:*", "locks:max_wait_s", "locks:root_blockers", "locks:detail"} {
		if !series[s] {
			t.Errorf("no evidence from %s", s)
		}
	}
	if !strings.Contains(f.Remedy, "lock_timeout") || !strings.Contains(f.Remedy, "pg_blocking_pids") {
		t.Errorf("remedy: %s", f.Remedy)
	}
}

// The lock waits of a deadlocking workload are reported, below critical,
// pointing at the deadlock finding.
func TestLockContentionWithDeadlocks(t *testing.T) {
	t.Parallel()
	fs := findingsOf(lockContention{}, openRecording(t, "stock-deadlock"))
	if len(fs) != 1 || fs[0].Severity == diagnose.Critical || !strings.Contains(fs[0].Mechanism, "Unlike a deadlock") {
		t.Fatalf("%+v", fs)
	}
}

// pgbench's TPC-B-like at 4 clients waits for branch rows all the time:
// short hand-overs, not a queue. At most an info.
func TestLockContentionQuiet(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"healthy", "guarded", "commit", "journal", "poolsmall", "multixact-broken"} {
		for _, f := range findingsOf(lockContention{}, openRecording(t, name)) {
			if f.Severity != diagnose.Info {
				t.Errorf("%s: %s %s", name, f.Severity, f.Headline)
			}
		}
	}
	for _, name := range []string{"commit", "journal", "journal-drill", "poolsmall"} {
		if fs := findingsOf(lockContention{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %s", name, fs[0].Headline)
		}
	}
}

// TestLockContentionNamesAForeignKeyConflict: inserts into order_lines
// wait for accounts rows that payments hold FOR UPDATE; the finding names
// the foreign key, the KEY SHARE vs FOR UPDATE conflict and the FOR NO
// KEY UPDATE fix, and never counter sharding. With FOR NO KEY UPDATE
// (fklock-fixed) the inserts do not wait.
func TestLockContentionNamesAForeignKeyConflict(t *testing.T) {
	t.Parallel()
	fs := findingsOf(lockContention{}, openRecording(t, "fklock"))
	if len(fs) != 1 {
		t.Fatalf("fklock: %d findings, want 1", len(fs))
	}
	f := fs[0]
	for _, want := range []string{"foreign-key lock conflict", "order_lines_account_id_fkey", "FOR KEY SHARE", "FOR UPDATE"} {
		if !strings.Contains(f.Headline, want) {
			t.Errorf("headline lacks %q: %s", want, f.Headline)
		}
	}
	if !strings.Contains(f.Remedy, "FOR NO KEY UPDATE") || strings.Contains(f.Remedy, "counter") {
		t.Errorf("remedy: %s", f.Remedy)
	}
	for _, f := range findingsOf(lockContention{}, openRecording(t, "fklock-fixed")) {
		if strings.Contains(f.Headline, "foreign-key") {
			t.Errorf("fklock-fixed: %s", f.Headline)
		}
	}
}

// TestLockRemedyFitsTheCause: counter sharding only for one hot row.
func TestLockRemedyFitsTheCause(t *testing.T) {
	t.Parallel()
	hot := hotSpot{Waits: 10, Keys: map[string]int{"1": 9, "2": 1}}
	spread := hotSpot{Waits: 20, Keys: map[string]int{}}
	for i := range 20 {
		spread.Keys[string(rune('a'+i))] = 1
	}
	tests := []struct {
		name    string
		cause   string
		counter bool
	}{
		{"one hot row", lockCause(false, false, []hotSpot{hot}), true},
		{"waits spread over 20 keys", lockCause(false, false, []hotSpot{spread}), false},
		{"behind an idle session", lockCause(false, true, []hotSpot{hot}), false},
		{"a foreign-key check", lockCause(true, false, []hotSpot{hot}), false},
	}
	for _, tt := range tests {
		if got := strings.Contains(lockRemedy(tt.cause, fkConflict{}), "counter"); got != tt.counter {
			t.Errorf("%s (%s): remedy mentions a counter %v, want %v", tt.name, tt.cause, got, tt.counter)
		}
	}
}
