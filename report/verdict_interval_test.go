package report

import (
	"strings"
	"testing"
)

// A change whose interval lies wholly on one side of no change is never
// "no significant difference", whatever the U test's p: the verdict
// agrees with the interval printed beside it (the aof fix's max read
// "÷98 (÷115 to ÷48), p = 0.06 — no significant difference").
func TestVerdictAgreesWithItsInterval(t *testing.T) {
	t.Parallel()
	// Nine blocks a side whose ranks overlap enough to keep the rank
	// test above α, while the medians' intervals stay below 1×.
	a := []float64{7, 2, 17, 14, 19, 17, 4, 12, 1}
	b := []float64{3, 9, 10, 2, 13, 7, 1, 1, 0}
	mc := compareValues(maxMetric, a, b, DefaultCompareOptions.withDefaults())
	t.Logf("p = %.3f, change %s, verdict %q", mc.P, ChangeText(mc), mc.Verdict)
	if !excludesNoChange(mc) {
		t.Fatalf("test data: the interval %s reaches no change; pick blocks further apart", changeRange(mc))
	}
	if mc.P < DefaultCompareOptions.Alpha {
		t.Fatalf("test data: p = %.3f is below α: this case tests the interval alone", mc.P)
	}
	if !mc.Significant || strings.Contains(mc.Verdict, "no significant difference") {
		t.Errorf("verdict %q (significant %v) for a change of %s", mc.Verdict, mc.Significant, ChangeText(mc))
	}
	if got := outcomeOf(mc, maxMetric); got != OutcomeFaster {
		t.Errorf("outcome %q, want %q", got, OutcomeFaster)
	}
}
