package diagnose

import (
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

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

// PeakOfMedians ignores one sample holding a batched stats flush between
// short neighbours (issue 26: a WAL "peak 265.7 MiB/s" between 30–45).
func TestPeakOfMedians(t *testing.T) {
	t.Parallel()
	var pts []timeline.Point
	for i, v := range []float64{30, 45, 0, 265.7, 0, 40, 38, 44, 35, 41} {
		pts = append(pts, timeline.Point{T: float64(i + 1), V: v})
	}
	peak, at := PeakOfMedians(pts, 0, 100)
	if peak != 40 || at != 4 {
		t.Errorf("peak %.1f at %.0f s, want 40 at 4 s", peak, at)
	}
	if peak, _ := PeakOfMedians(pts[:3], 0, 100); peak != 30 {
		t.Errorf("fewer samples than the window: %.1f, want their median 30", peak)
	}
}
