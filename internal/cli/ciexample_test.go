package cli

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// The example CI job in contrib/ci uses only commands and flags firedrill
// has: each firedrill command in its steps parses (cobra refuses an
// unknown flag even with --help).
func TestExampleCIJobUsesRealFlags(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../contrib/ci/github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("contrib/ci/github-actions.yml: %v", err)
	}
	n := 0
	for _, job := range wf.Jobs {
		for _, step := range job.Steps {
			for _, line := range strings.Split(step.Run, "\n") {
				fields := strings.Fields(line)
				if len(fields) == 0 || fields[0] != "firedrill" {
					continue
				}
				n++
				env, _, stderr := clikit.MemoryEnv("")
				if code := Main(env, kinds.Registry(), append(fields[1:], "--help")); code != 0 {
					t.Errorf("%q: exit %d: %s", line, code, stderr)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("the example runs no firedrill command")
	}
}
