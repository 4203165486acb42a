package kinds_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// Every registered backend runs its testdata/conformance.yaml end to end on
// a throwaway server of its own: a new backend is tested by registering it
// (and writing that scenario). The run must complete, say which kind ran
// it, move transactions, and read every sampler it lists without error.
func TestEveryBackendRunsAScenario(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server per backend")
	}
	for _, b := range kinds.Registry().Backends() {
		t.Run(b.Kind(), func(t *testing.T) {
			path := filepath.Join("..", "db", b.Kind(), "testdata", "conformance.yaml")
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("backend %s has no conformance scenario: %v", b.Kind(), err)
			}
			sc, err := scenario.Load(path, kinds.Registry().ScenarioOptions())
			if err != nil {
				t.Fatal(err)
			}
			res, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: kinds.Registry(), RunDir: t.TempDir()})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			run, err := timeline.Open(res.Dir)
			if err != nil {
				t.Fatal(err)
			}
			m := run.Manifest
			if m.Status != timeline.StatusCompleted || m.Target.Kind != b.Kind() || !m.Target.Embedded || m.Target.ServerVersion == "" {
				t.Errorf("manifest: status %s, target %+v", m.Status, m.Target)
			}
			var tx int64
			for _, iv := range run.Intervals {
				tx += iv.Count
			}
			if tx == 0 {
				t.Error("no transaction completed")
			}
			read := map[string]int{}
			for _, s := range run.Samples {
				if s.Error != "" {
					t.Errorf("sampler %s at %.1f s: %s", s.Source, s.T, s.Error)
				}
				read[s.Source]++
			}
			for _, s := range m.Samplers {
				if read[s.Name] == 0 && s.Notes == "" {
					t.Errorf("sampler %s listed but never read", s.Name)
				}
			}
			if len(m.Settings) == 0 {
				t.Error("no settings recorded")
			}
		})
	}
}
