package promexport

import (
	"testing"
	"time"

	"github.com/firedrill/firedrill/diagnose"
)

// findingValues is firedrill_finding's series, keyed by their labels.
func findingValues(t *testing.T, e *Exporter) (finding map[[3]string]float64, bySeverity map[string]float64) {
	t.Helper()
	fams := gather(t, e)
	finding, bySeverity = map[[3]string]float64{}, map[string]float64{}
	for _, m := range fams["firedrill_finding"].GetMetric() {
		l := labelsOf(m)
		tgt, has := l["target"]
		if !has {
			tgt = "-"
		}
		finding[[3]string{l["rule"], l["severity"], tgt}] = m.GetGauge().GetValue()
	}
	for _, m := range fams["firedrill_findings"].GetMetric() {
		bySeverity[labelsOf(m)["severity"]] = m.GetGauge().GetValue()
	}
	return finding, bySeverity
}

// firedrill_findings is served at zero for every severity from the
// start (a clean run's panel shows 0, not "no data"); each diagnosis
// replaces the last, so a resolved finding leaves firedrill_finding;
// two findings of one rule (two workloads) are one series of value 2;
// the target label appears only in a run of several targets.
func TestExporterServesFindings(t *testing.T) {
	t.Parallel()
	e := New("v", testNames()...)
	e.Findings([]diagnose.Finding{{Rule: "lock-wait", Severity: diagnose.Critical}}) // before Start: dropped
	e.Start(Labels{Scenario: "s", RunID: "r", Backend: "postgres"}, 10*time.Second)
	finding, bySeverity := findingValues(t, e)
	if len(finding) != 0 || len(bySeverity) != 3 || bySeverity["critical"] != 0 || bySeverity["warning"] != 0 || bySeverity["info"] != 0 {
		t.Errorf("clean start: finding %v, findings by severity %v; want no finding and three zeros", finding, bySeverity)
	}

	e.Findings([]diagnose.Finding{
		{Rule: "lock-wait", Severity: diagnose.Critical, Workload: "a"},
		{Rule: "lock-wait", Severity: diagnose.Critical, Workload: "b"},
		{Rule: "idle-in-transaction", Severity: diagnose.Warning},
	})
	finding, bySeverity = findingValues(t, e)
	if finding[[3]string{"lock-wait", "critical", "-"}] != 2 || finding[[3]string{"idle-in-transaction", "warning", "-"}] != 1 || len(finding) != 2 {
		t.Errorf("finding %v", finding)
	}
	if bySeverity["critical"] != 2 || bySeverity["warning"] != 1 || bySeverity["info"] != 0 {
		t.Errorf("findings by severity %v", bySeverity)
	}

	// The next pass: the lock wait resolved; a finding about a target of
	// a run of several brings the target label.
	e.Findings([]diagnose.Finding{{Rule: "aof-fsync", Severity: diagnose.Warning, Target: "cache"}})
	finding, bySeverity = findingValues(t, e)
	if len(finding) != 1 || finding[[3]string{"aof-fsync", "warning", "cache"}] != 1 {
		t.Errorf("after the second pass: finding %v, want only aof-fsync on target cache", finding)
	}
	if bySeverity["critical"] != 0 || bySeverity["warning"] != 1 {
		t.Errorf("after the second pass: findings by severity %v", bySeverity)
	}
}
