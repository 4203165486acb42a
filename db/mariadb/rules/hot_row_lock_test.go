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
