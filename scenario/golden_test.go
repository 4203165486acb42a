package scenario_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/bad")

// TestBadGolden loads each testdata/bad/NAME.yaml, every one holding
// several mistakes, and compares the whole error report with
// testdata/bad/NAME.golden; go test -update rewrites the golden files.
func TestBadGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("found %d bad scenarios, want at least 6", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := Load(file, kinds.Registry().ScenarioOptions())
			if err == nil {
				t.Fatalf("Load succeeded (%s), want errors", s.Name)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is a %T, want Errors: %v", err, err)
			}
			if s != nil {
				t.Error("Load returned a scenario with its errors")
			}
			for _, e := range errs {
				if e.File == "" || e.Msg == "" {
					t.Errorf("error without a file or message: %#v", e)
				}
			}
			compareGolden(t, strings.TrimSuffix(file, ".yaml")+".golden", err.Error()+"\n")
		})
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./scenario -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("errors differ from %s (go test ./scenario -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
