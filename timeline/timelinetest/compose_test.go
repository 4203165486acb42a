package timelinetest

import (
	"path/filepath"
	"slices"
	"testing"
)

// A PostgreSQL run and a Redis run compose into one run of two targets
// whose views read as the runs they came from.
func TestCompose(t *testing.T) {
	t.Parallel()
	testdata := filepath.Join("..", "..", "diagnose", "testdata")
	run, err := Compose(t.TempDir(), Part{Name: "db", Dir: filepath.Join(testdata, "healthy")}, Part{Name: "cache", Dir: filepath.Join(testdata, "aof-broken")})
	if err != nil {
		t.Fatal(err)
	}
	if got := run.Manifest.TargetNames(); !slices.Equal(got, []string{"db", "cache"}) {
		t.Fatalf("targets %v", got)
	}
	if run.Manifest.Target.Kind != "postgres" || run.Manifest.Targets[1].Target.Kind != "redis" {
		t.Errorf("kinds: %+v", run.Manifest.Targets)
	}
	hosts := 0
	for _, s := range run.Samples {
		if hostSource(s.Source) {
			hosts++
			if s.Target != "" {
				t.Errorf("a host sample names target %q", s.Target)
			}
		} else if s.Target == "" {
			t.Errorf("sample %s names no target", s.Source)
		}
	}
	if hosts == 0 {
		t.Error("no host samples")
	}
	cache := run.ForTarget("cache")
	if cache.Manifest.Target.Kind != "redis" || len(cache.Manifest.Workloads) != 1 || cache.Manifest.Workloads[0].Name != "cache" || len(cache.Intervals) == 0 {
		t.Errorf("cache's view: %+v, %d intervals", cache.Manifest.Workloads, len(cache.Intervals))
	}
	for _, s := range cache.Samples {
		if s.Target == "db" {
			t.Errorf("cache's view holds db's sample %s", s.Source)
		}
	}
	if run.Summary == nil || len(run.Summary.Workloads) != 2 {
		t.Errorf("summary %+v", run.Summary)
	}
}
