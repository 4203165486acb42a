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
// otherwise. A severity is shown only once it held for the confirmation
// window (issue 26), unless its evidence cannot shrink (Lasting).
func TestLiveFindingsFollowSeverity(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	l := &liveDiagnosis{backends: kinds.Registry(), w: &out}
	step := func(elapsed float64, fs ...diagnose.Finding) string {
		out.Reset()
		l.pass(elapsed, fs)
		return out.String()
	}
	deadlocks := func(headline string) diagnose.Finding {
		f := finding("deadlock", diagnose.Critical, headline)
		f.Lasting = true
		return f
	}
	if got := step(1, finding("deadlock", diagnose.Info, "latent inversion")); got != "" {
		t.Errorf("INFO printed live: %q", got)
	}
	got := step(11, deadlocks("deadlocks: 12"), finding("lock-contention", diagnose.Warning, "lock waits"))
	if want := "11.0 s  CRITICAL  deadlocks: 12 — Take the locks in one order, e.g. by id: `ORDER BY id`.  (deadlock)\n"; !strings.Contains(got, want) {
		t.Errorf("pass at 11 s printed\n%s\nwant a line with %q", got, want)
	}
	if strings.Contains(got, "lock waits") {
		t.Errorf("a warning not yet held for the confirmation window was printed: %q", got)
	}
	if got := step(21, deadlocks("deadlocks: 30"), finding("lock-contention", diagnose.Critical, "lock queue")); strings.Count(got, "\n") != 1 ||
		!strings.Contains(got, "21.0 s  WARNING  lock queue") {
		t.Errorf("the warning held 10 s is shown, as WARNING until the critical holds: %q", got)
	}
	if got := step(31, deadlocks("deadlocks: 35"), finding("lock-contention", diagnose.Critical, "lock queue")); strings.Count(got, "\n") != 1 ||
		!strings.Contains(got, "now CRITICAL  lock queue") {
		t.Errorf("a rise is one line, the same severity none: %q", got)
	}
	if got := step(41, deadlocks("deadlocks: 41")); got != "   41.0 s  resolved: lock queue  (lock-contention)\n" {
		t.Errorf("resolution: %q", got)
	}
	if got := step(51, deadlocks("deadlocks: 45"), finding("lock-contention", diagnose.Warning, "lock waits")); got != "" {
		t.Errorf("a resolved finding that comes back is confirmed again: %q", got)
	}
	if got := step(61, deadlocks("deadlocks: 50"), finding("lock-contention", diagnose.Warning, "lock waits"), finding("missing-index", diagnose.Warning, "seq scans")); !strings.Contains(got, "again WARNING  lock waits") {
		t.Errorf("a resolved finding that comes back: %q", got)
	}
	step(71, deadlocks("deadlocks: 50"), finding("lock-contention", diagnose.Warning, "lock waits"), finding("missing-index", diagnose.Warning, "seq scans"))
	over := finding("missing-index", diagnose.Info, "Resolved at 75 s: seq scans")
	over.Resolved = 75
	if got := step(81, deadlocks("deadlocks: 50"), finding("lock-contention", diagnose.Warning, "lock waits"), over); got != "   81.0 s  resolved at 75 s: seq scans  (missing-index)\n" {
		t.Errorf("an incident the rule judges over: %q", got)
	}
	out.Reset()
	l.summary([]diagnose.Finding{finding("lock-contention", diagnose.Info, "background lock waits"), over})
	for _, want := range []string{
		"deadlocks: 50 (deadlock, shown live as CRITICAL): not in the final report",
		"lock waits (lock-contention): shown live as WARNING, INFO in the final report — over the whole run: background lock waits",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary\n%s\nwant %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "seq scans") {
		t.Errorf("the summary lists a finding the final report keeps as resolved:\n%s", out.String())
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
