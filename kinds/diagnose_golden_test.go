package kinds_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/diagnose/diagnosetest"
	"github.com/firedrill/firedrill/kinds"
)

var update = flag.Bool("update", false, "rewrite diagnose/testdata/golden/ from what Diagnose finds now")

// TestRecordingsDiagnoseAsGolden holds Diagnose to the findings each
// recorded run gave when its golden was written, so that a change in how
// rules are registered, selected or fed (metric names, sources, scripts)
// cannot silently change a diagnosis. A change meant to change findings
// refreshes the goldens with -update and shows the difference in review.
// The recordings are every kind's, so the test lives with the registry
// of kinds: each is diagnosed with its own kind's rules, a run of several
// targets per target (DiagnoseTargets), as the command line does.
func TestRecordingsDiagnoseAsGolden(t *testing.T) {
	t.Parallel()
	reg := kinds.Registry()
	for _, name := range diagnosetest.Recordings(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := diagnosetest.Open(t, name)
			fs := diagnose.DiagnoseTargets(run, reg.Rules)
			if fs == nil {
				fs = []diagnose.Finding{}
			}
			got, err := json.MarshalIndent(fs, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join(diagnosetest.Dir(), "golden", name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (go test ./kinds -run Golden -update writes it): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("findings of %s differ from %s:\n got: %s\nwant: %s", name, path, got, want)
			}
		})
	}
}
