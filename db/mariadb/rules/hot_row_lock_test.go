package mariadbrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"
)

// TestHotRowLockWaits: the stock drill's batched carts on InnoDB (13 to 20
// rows per transaction, the hot SKUs among them) queue on row locks; the
// openchat joins under READ COMMITTED with mode 2 do not wait for rows.
func TestHotRowLockWaits(t *testing.T) {
	t.Parallel()
	fs := (hotRowLock{}).Check(openRecording(t, "stock-mariadb-fixed-2"))
	if len(fs) != 1 || fs[0].Severity != diagnose.Warning {
		t.Fatalf("stock-mariadb-fixed-2: %+v, want one warning", fs)
	}
	text := findingText(fs[0])
	for _, want := range []string{"firedrill.stock (PRIMARY)", "FOR UPDATE", "Innodb_row_lock_waits", "Spread a hot counter"} {
		if !strings.Contains(text, want) {
			t.Errorf("the finding does not say %q:\n%s", want, text)
		}
	}
	if fs := (hotRowLock{}).Check(openRecording(t, "openchat-fixed")); len(fs) != 0 {
		t.Errorf("openchat-fixed: %+v", fs)
	}
}

// TestHotRowLockWaitsBehindAnIdleHolder: when the head of the waits is a
// session idle in its transaction, the finding blames it, not a waiting
// session's UPDATE, gives the KILL remedy rather than counter sharding,
// and spans the waits (10–25 s), not the run.
func TestHotRowLockWaitsBehindAnIdleHolder(t *testing.T) {
	t.Parallel()
	fs := (hotRowLock{}).Check(openRecording(t, "mariadb-idleblock"))
	if len(fs) != 1 {
		t.Fatalf("mariadb-idleblock: %+v, want one finding", fs)
	}
	text := findingText(fs[0])
	for _, want := range []string{"idle transaction", "connection 15", "KILL 15;", "1205"} {
		if !strings.Contains(text, want) {
			t.Errorf("the finding does not say %q:\n%s", want, text)
		}
	}
	for _, wrong := range []string{"Spread a hot counter", "behind (the current statement"} {
		if strings.Contains(text, wrong) {
			t.Errorf("the finding says %q:\n%s", wrong, text)
		}
	}
	if f := fs[0]; f.Start < 8 || f.Start > 12 || f.End < 23 || f.End > 28 {
		t.Errorf("window [%.1f, %.1f], want about [10, 25]", f.Start, f.End)
	}
}
