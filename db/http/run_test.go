package http_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	hm "github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// runScenario loads src (with named DSNs) and runs it to the end.
func runScenario(t *testing.T, src string, dsns map[string]string) *timeline.Run {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := kinds.Registry()
	dsn := dsns[""] // a scenario of one system's --dsn
	opts := reg.ScenarioOptionsFor(dsn)
	if dsn == "" {
		opts.DSNs = dsns
	}
	sc, err := scenario.Load(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: reg, DSN: dsn, RunDir: filepath.Join(dir, "run")})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// An HTTP workload and an observed PostgreSQL (no workload) run on one
// clock: the service's request series and the database's samples share
// the ticks, each named by its target, and the run diagnoses both.
func TestServiceAndObservedDatabaseOnOneClock(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	var hits atomic.Int64
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Query().Get("id") == "13" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"id": %q}`, r.URL.Query().Get("id"))
	}))
	defer svc.Close()
	src := `name: api-and-db
duration: 3s
targets:
  api: {kind: http, headers: {Authorization: "Bearer s3cr3t-t0ken-value"}, timeout: 2s}
  db: {kind: postgres}
workloads:
  - name: browse
    target: api
    rate: 100
    clients: 4
    scripts:
      - inline: |
          \set id random(1, 20)
          GET /items?id=:id
          \check $.id == :id
`
	run := runScenario(t, src, map[string]string{"api": svc.URL})
	m := run.Manifest
	if len(m.Targets) != 2 {
		t.Fatalf("targets %+v", m.Targets)
	}
	ticks := map[string]map[float64]bool{}
	var fiveXX float64
	for _, s := range run.Samples {
		key := s.Target + "/" + s.Source
		if ticks[key] == nil {
			ticks[key] = map[float64]bool{}
		}
		ticks[key][s.T] = true
		if s.Target == "api" && s.Source == hm.Source {
			fiveXX += s.Values["GET /items"+hm.Status5xxSuffix]
		}
	}
	httpTicks, pgTicks := ticks["api/"+hm.Source], ticks["db/pg_stat_activity"]
	if len(httpTicks) < 3 || len(pgTicks) < 3 {
		t.Fatalf("ticks: http %d, pg_stat_activity %d (sources %v)", len(httpTicks), len(pgTicks), keys(ticks))
	}
	shared := 0
	for tick := range httpTicks {
		if pgTicks[tick] {
			shared++
		}
	}
	if shared < len(httpTicks)*9/10 {
		t.Errorf("only %d of %d ticks of the service's series are the database's too", shared, len(httpTicks))
	}
	var failed int64
	errs := map[string]int64{}
	for _, iv := range run.Intervals {
		failed += iv.Failed
		for k, v := range iv.Errors {
			errs[k] += v
		}
	}
	if failed == 0 || errs["http-503"] != failed || fiveXX == 0 {
		t.Errorf("failed %d, errors %v, 5xx rate sum %v: want the id=13 requests failed as http-503", failed, errs, fiveXX)
	}
	reg := kinds.Registry()
	findings := diagnose.DiagnoseTargets(run, reg.Rules)
	_ = findings // both targets diagnosed without a panic; the rules are the kinds' own
	// The header's value is in no file of the run directory.
	filepath.Walk(run.Dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(path)
			if strings.Contains(string(b), "s3cr3t-t0ken-value") {
				t.Errorf("%s holds the Authorization header's value", path)
			}
		}
		return nil
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// An open-model run reaches its rate: the transactions started are
// within 2 % of the rate times the duration.
func TestOpenModelRate(t *testing.T) {
	src := `name: rate
duration: 5s
target: {kind: http}
workloads:
  - name: steady
    rate: 400
    clients: 8
    scripts:
      - inline: |
          GET /json?n=3
          \check $.items[2].id == 3
`
	run := runScenario(t, src, nil)
	var done, failed int64
	var span float64
	for _, iv := range run.Intervals {
		done += iv.Count
		failed += iv.Failed + iv.Skipped
		span = math.Max(span, iv.End)
	}
	want := 400 * 5.0
	if failed != 0 || math.Abs(float64(done)-want)/want > 0.02 {
		t.Errorf("%d transactions (%d failed or skipped) in %.2f s, want %.0f ± 2 %%", done, failed, span, want)
	}
}

// connections: N makes the clients share N keep-alive connections.
func TestSharedConnections(t *testing.T) {
	var accepted atomic.Int64
	svc := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	svc.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			accepted.Add(1)
		}
	}
	svc.Start()
	defer svc.Close()
	src := `name: shared
duration: 2s
target: {kind: http, connections: 2}
workloads:
  - name: many
    clients: 6
    scripts:
      - inline: |
          GET /
          \check body contains "ok"
`
	run := runScenario(t, src, map[string]string{"": svc.URL})
	var done int64
	for _, iv := range run.Intervals {
		done += iv.Count
	}
	// The probe when the target opened is one more.
	if n := accepted.Load(); n != 3 || done == 0 {
		t.Errorf("%d connections accepted (the probe and 2 shared), %d transactions", n, done)
	}
}
