package diagnose

import "testing"

// Confirmation shows a severity once it has held for the window in every
// pass, at once when Lasting, and starts over when a pass breaks it.
func TestConfirmation(t *testing.T) {
	t.Parallel()
	f := func(sev string) Finding { return Finding{Rule: "r", Severity: sev} }
	lasting := f(Critical)
	lasting.Lasting = true
	var c Confirmation // DefaultConfirmS: 10 s
	steps := []struct {
		t    float64
		in   []Finding
		want string // the severity shown; "" for no finding
	}{
		{1, []Finding{f(Warning)}, Info},      // first seen: held back
		{6, []Finding{f(Critical)}, Info},     // warning or worse for 5 s only
		{11, []Finding{f(Critical)}, Warning}, // warning or worse for 10 s, critical 5 s
		{16, []Finding{f(Critical)}, Critical},
		{17, []Finding{f(Info)}, Info},    // the run breaks …
		{20, []Finding{f(Warning)}, Info}, // … and starts over
		{25, nil, ""},                     // absent: forgotten
		{30, []Finding{f(Warning)}, Info}, // so this starts over too
		{40, []Finding{f(Warning)}, Warning},
		{41, []Finding{lasting}, Critical}, // deadlocks counted: at once
	}
	for _, s := range steps {
		out := c.Confirm(s.t, s.in)
		got := ""
		if len(out) > 0 {
			got = out[0].Severity
		}
		if got != s.want {
			t.Errorf("at %.0f s: shown %q, want %q", s.t, got, s.want)
		}
	}
}

// FinalOf matches a live finding without a workload to the final one of
// its rule that names one (rules that learn it only from end-of-run
// evidence), and Withdrawn spares a final finding that says it resolved.
func TestWithdrawn(t *testing.T) {
	t.Parallel()
	live := Finding{Rule: "multixact-slru-thrash", Severity: Warning}
	final := []Finding{{Rule: "multixact-slru-thrash", Workload: "oltp", Severity: Warning}}
	if Withdrawn(live, final) {
		t.Error("a warning kept under its workload counted as withdrawn")
	}
	if !Withdrawn(live, []Finding{{Rule: "multixact-slru-thrash", Severity: Info}}) {
		t.Error("a warning lowered to info not counted as withdrawn")
	}
	if Withdrawn(live, []Finding{{Rule: "multixact-slru-thrash", Severity: Info, Resolved: 30}}) {
		t.Error("a warning the final report keeps as resolved counted as withdrawn")
	}
	if !Withdrawn(live, nil) {
		t.Error("a dropped warning not counted as withdrawn")
	}
}
