package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// overheadScenario is a closed-model read load, with or without a
// service of ample threads and no limits (its pool as large as the
// clients, so that nobody waits for a connection).
const overheadScenario = `name: service-overhead
duration: 8s
%s
workloads:
  - name: read
    clients: 8
    %s
    scripts:
      - inline: |
          SELECT 1;
`

// BenchmarkServiceOverhead compares a workload through a service with
// ample threads and no limits against the same workload without one, on
// an embedded PostgreSQL: pairs of 8 s runs, alternated, and the ratio
// of their transactions (target ≥ 0.95). b.N is not used: each pair is
// one measurement (run with -benchtime=1x -count=N).
func BenchmarkServiceOverhead(b *testing.B) {
	var direct, through int64
	for range 2 {
		direct += overheadRun(b, "", "")
		through += overheadRun(b, "services: [{name: api, max_threads: 200, pool: {size: 8}}]", "service: api")
	}
	b.ReportMetric(float64(through)/float64(direct), "through/direct")
	b.ReportMetric(float64(direct)/16, "direct-tps")
	b.ReportMetric(float64(through)/16, "through-tps")
}

func overheadRun(b *testing.B, services, use string) int64 {
	b.Helper()
	dir := b.TempDir()
	src := strings.Replace(strings.Replace(overheadScenario, "%s", services, 1), "%s", use, 1)
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	sc, err := scenario.Load(path, kinds.Registry().ScenarioOptions())
	if err != nil {
		b.Fatal(err)
	}
	var log strings.Builder
	res, err := Run(context.Background(), Options{Scenario: sc, Backends: kinds.Registry(), RunDir: dir + "/run", Log: &log, NoSamplers: true})
	if err != nil {
		b.Fatalf("Run: %v\n%s", err, log.String())
	}
	run, err := timeline.Open(res.Dir)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, iv := range run.WorkloadIntervals("read") {
		n += iv.Count
	}
	return n
}
