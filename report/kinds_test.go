package report

import (
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// testKinds are the presentations of every kind firedrill is built with,
// as the command line hands them to the report.
func testKinds() present.Kinds {
	reg := kinds.Registry()
	return present.KindsOf(reg.Default(), reg.Backends())
}

// openRun opens a recorded run as the command line does: with the
// product of its kind filled in where the run did not record it.
func openRun(dir string) (*timeline.Run, error) {
	run, err := timeline.Open(dir)
	if err != nil {
		return nil, err
	}
	testKinds().Fill(run)
	return run, nil
}

// compareForTest is Compare as the command line calls it: with the
// kinds' counters and loads.
func compareForTest(a, b *timeline.Run, fa, fb []diagnose.Finding) *Comparison {
	opts := DefaultCompareOptions
	opts.Kinds = testKinds()
	return CompareWith(a, b, fa, fb, opts)
}

// TestOldRunsProduct: runs recorded before the backends filled Product in
// are named by their kind's product when opened, as before kinds
// registered their names; a run of no kind is the default kind's.
func TestOldRunsProduct(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target timeline.Target
		want   string
	}{
		{timeline.Target{}, "PostgreSQL"}, // runs from before the kind was recorded
		{timeline.Target{Kind: "postgres"}, "PostgreSQL"},
		{timeline.Target{Kind: "mariadb", Product: "MySQL"}, "MySQL"},
		{timeline.Target{Kind: "mariadb"}, "MariaDB"},
		{timeline.Target{Kind: "redis"}, "Redis"},
		{timeline.Target{Kind: "http"}, "HTTP service"},
		{timeline.Target{Kind: "cockroach"}, "cockroach"}, // a kind without a presentation: its kind
	}
	for _, test := range tests {
		run := &timeline.Run{Manifest: timeline.Manifest{Target: test.target}}
		testKinds().Fill(run)
		if got := run.Manifest.Target.ProductName(); got != test.want {
			t.Errorf("%+v: product %q, want %q", test.target, got, test.want)
		}
	}
}
