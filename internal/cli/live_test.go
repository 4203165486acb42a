package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
)

func finding(rule, severity, headline string) diagnose.Finding {
	return diagnose.Finding{Rule: rule, Severity: severity, Headline: headline,
		Remedy: "Take the locks in one order, e.g. by id: `ORDER BY id`. Then retry."}
}

// The live stream follows a finding's severity (issue 11): INFO is not
// shown, its rise to CRITICAL is; a rise and a resolution are one line
// each; at the end it says which live findings the final report judged
// otherwise.
func TestLiveFindingsFollowSeverity(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	l := &liveDiagnosis{backends: kinds.Registry(), w: &out}
	step := func(elapsed float64, fs ...diagnose.Finding) string {
		out.Reset()
		l.pass(elapsed, fs)
		return out.String()
	}
	if got := step(1, finding("deadlock", diagnose.Info, "latent inversion")); got != "" {
		t.Errorf("INFO printed live: %q", got)
	}
	got := step(11, finding("deadlock", diagnose.Critical, "deadlocks: 12"), finding("lock-contention", diagnose.Warning, "lock waits"))
	for _, want := range []string{
		"11.0 s  CRITICAL  deadlocks: 12 — Take the locks in one order, e.g. by id: `ORDER BY id`.  (deadlock)\n",
		"11.0 s  WARNING  lock waits — Take the locks",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("pass at 11 s printed\n%s\nwant a line with %q", got, want)
		}
	}
	if got := step(21, finding("deadlock", diagnose.Critical, "deadlocks: 30"), finding("lock-contention", diagnose.Critical, "lock queue")); strings.Count(got, "\n") != 1 ||
		!strings.Contains(got, "now CRITICAL  lock queue") {
		t.Errorf("a rise is one line, the same severity none: %q", got)
	}
	if got := step(31, finding("deadlock", diagnose.Critical, "deadlocks: 41")); got != "   31.0 s  resolved: lock queue  (lock-contention)\n" {
		t.Errorf("resolution: %q", got)
	}
	if got := step(41, finding("deadlock", diagnose.Critical, "deadlocks: 50"), finding("lock-contention", diagnose.Warning, "lock waits")); !strings.Contains(got, "again WARNING  lock waits") {
		t.Errorf("a resolved finding that comes back: %q", got)
	}
	out.Reset()
	l.summary([]diagnose.Finding{finding("lock-contention", diagnose.Info, "background lock waits")})
	for _, want := range []string{
		"deadlocks: 50 (deadlock, shown live as CRITICAL): not in the final report",
		"lock waits (lock-contention): shown live as WARNING, INFO in the final report — over the whole run: background lock waits",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary\n%s\nwant %q", out.String(), want)
		}
	}
}

func TestFirstSentence(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Batch the updates. Then commit.": "Batch the updates.",
		"Set `a.b = 1`. Then reload.":     "Set `a.b = 1`.",
		"Use e.g. an index. Or not.":      "Use e.g. an index.",
		"no full stop":                    "no full stop",
		"Version 1.5 is out. Upgrade.":    "Version 1.5 is out.",
	} {
		if got := firstSentence(in); got != want {
			t.Errorf("firstSentence(%q) = %q, want %q", in, got, want)
		}
	}
}
