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
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// An open-model run reaches its rate: the transactions done are within
// 2 % of the rate times the duration, beyond those the schedule's lag at
// the end left unstarted (the engine starts none after the duration: on
// a loaded machine the clients may trail their schedule by a few
// hundred ms there). Arrivals are Poisson, so their count varies by √n
// (1.4 % of 5,000): the seed fixes it.
func TestOpenModelRate(t *testing.T) {
	if testing.Short() {
		t.Skip("a 10 s run")
	}
	src := `name: rate
duration: 10s
target: {kind: http}
workloads:
  - name: steady
    rate: 500
    seed: 7
    clients: 8
    scripts:
      - inline: |
          GET /json?n=3
          \check $.items[2].id == 3
`
	run := runScenario(t, src, nil)
	var done, failed, lastLagUS int64
	var span float64
	for _, iv := range run.Intervals {
		done += iv.Count
		failed += iv.Failed + iv.Skipped
		if iv.End >= span {
			span, lastLagUS = iv.End, iv.LagMaxUS
		}
	}
	const rate, seconds = 500, 10.0
	want := rate * seconds
	trailing := rate * float64(lastLagUS) / 1e6
	t.Logf("%d transactions in %.2f s: %.2f %% of the offered %.0f; the schedule trailed by %.0f ms at the end", done, span, 100*float64(done)/want, want, float64(lastLagUS)/1000)
	if failed != 0 || math.Abs(float64(done)-want) > 0.02*want+trailing {
		t.Errorf("%d transactions (%d failed or skipped) in %.2f s, want %.0f ± 2 %% (+%.0f left by the lag)", done, failed, span, want, trailing)
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

// validate names the scenario's file:line:col of an HTTP script line it
// cannot read, and refuses a service URL it cannot load.
func TestValidateErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ target, script, want string }{
		{"{kind: http}", `GET /x\n\check status = 200`, "s.yaml:10:25: \\check status: \"=\" is not a comparison"},
		{"{kind: http}", `get /x`, "s.yaml:9:11: not an HTTP request line"},
		{"{kind: http, url: \"http://127.0.0.1:9/api?token=zzz-secret\"}", `GET /x`, "url http://127.0.0.1:9/api: a base URL has no query"},
		{"{kind: http, embedded: jornal-api}", `GET /x`, "s.yaml:3:32: embedded: firedrill has no service \"jornal-api\""},
		{"{kind: http, embedded: journal-api}", `GET /x`, "s.yaml:3:32: embedded: journal-api needs its database"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.yaml")
		src := fmt.Sprintf("name: v\nduration: 2s\ntarget: %s\nworkloads:\n  - name: w\n    clients: 1\n    scripts:\n      - inline: |\n          %s\n", tc.target, strings.ReplaceAll(tc.script, `\n`, "\n          "))
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		reg := kinds.Registry()
		sc, err := scenario.Load(path, reg.ScenarioOptions())
		if err == nil {
			err = runner.Validate(sc, runner.Options{Scenario: sc, Backends: reg})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "zzz-secret") {
			t.Errorf("%s / %q: %v, want %q", tc.target, tc.script, err, tc.want)
		}
	}
}

// embeddedJournalScenario is a small examples/http-journal.yaml: the
// database's setup (fewer rows: 10 journals a user, so the first page
// asks for 5 to get a cursor), the embedded journal-api in front of it,
// and a load whose users past 10,000 do not exist (404s).
const embeddedJournalScenario = `name: embedded-journal
duration: 9s
sample_interval: 1s
targets:
  db:
    kind: postgres
    setup:
      schema: public
      sql:
        - |
          CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL);
          INSERT INTO users SELECT g, 'user ' || g FROM generate_series(1, 10000) g;
          CREATE TABLE journals (id bigserial PRIMARY KEY, user_id int NOT NULL, posted_at timestamptz NOT NULL,
            deleted_at timestamptz, title text NOT NULL, body text NOT NULL);
          INSERT INTO journals (user_id, posted_at, deleted_at, title, body)
          SELECT 1 + (g::bigint * 7919) % 10000, timestamptz '2026-01-01' - g * interval '1 minute',
                 CASE WHEN g % 20 = 0 THEN timestamptz '2026-01-02' END, 'journal ' || g, repeat('lorem ipsum ', 20)
          FROM generate_series(1, 100000) g;
          CREATE INDEX journals_user_id ON journals (user_id);
          ANALYZE users, journals;
  api: {kind: http, embedded: journal-api, database: db, timeout: 10s}
workloads:
  - name: browse
    target: api
    rate: 20
    seed: 3
    clients: 8
    scripts:
      - inline: |
          \set uid random(1, 11000)
          GET /journals?user=:uid&limit=5
          \gset cursor = $.next_cursor
          \if :uid <= 10000
          GET /journals?user=:uid&cursor=:cursor&limit=20
          \check status == 200
          \endif
  - name: health
    target: api
    rate: 5
    clients: 1
    scripts:
      - inline: |
          GET /journals?user=1&limit=20
          \check status == 200
`

// A target of kind http with embedded: journal-api starts firedrill's
// own service in front of the database target it names, handed that
// target's connection string, with no shell: the run loads it, diagnoses
// both targets (the service's 404s, the database's cursor page that no
// index serves), breaks each workload's requests down by endpoint, and
// stops the service with the run (its port no longer answers).
func TestEmbeddedJournalAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	run := runScenario(t, embeddedJournalScenario, nil)
	m := run.Manifest
	if len(m.Targets) != 2 || m.Targets[1].Name != "api" {
		t.Fatalf("targets %+v", m.Targets)
	}
	api := m.Targets[1].Target
	if !api.Embedded || !strings.Contains(api.ServerVersion, "journal-api") || m.Targets[1].Settings["embedded"] != "journal-api" {
		t.Errorf("api: %+v, settings %v: want the embedded journal-api", api, m.Targets[1].Settings)
	}
	var done int64
	errs := map[string]int64{}
	for _, iv := range run.Intervals {
		done += iv.Count
		for k, v := range iv.Errors {
			errs[k] += v
		}
	}
	if done < 50 || errs["http-404"] == 0 || len(errs) != 1 {
		t.Errorf("%d transactions, errors %v: want the unknown users' 404s alone", done, errs)
	}
	findings := diagnose.DiagnoseTargets(run, kinds.Registry().Rules)
	byTarget := map[string][]string{}
	for _, f := range findings {
		byTarget[f.Target] = append(byTarget[f.Target], f.Rule)
	}
	if !slices.Contains(byTarget["api"], "http-status-class") || !slices.Contains(byTarget["db"], "missing-index") {
		t.Errorf("findings by target %v: want api's http-status-class and db's missing-index", byTarget)
		for _, f := range findings {
			t.Logf("%s %s: %s", f.Target, f.Rule, f.Headline)
		}
	}
	// Each workload's endpoints apart, though both request GET /journals.
	bs := run.Breakdowns()
	if len(bs) != 1 || bs[0].Target != "api" {
		t.Fatalf("breakdowns %+v", bs)
	}
	rows := map[string][]string{}
	for _, r := range bs[0].Rows {
		rows[r.Workload+" "+r.Name] = r.Cells
	}
	browse, health := rows["browse GET /journals"], rows["health GET /journals"]
	if len(browse) == 0 || len(health) == 0 || browse[3] == "0" || health[3] != "0" || health[0] == browse[0] {
		t.Errorf("breakdown rows %v: want browse's and health's GET /journals apart, the 404s browse's", rows)
	}
	// The service stopped with the run.
	if c, err := net.DialTimeout("tcp", api.Address, time.Second); err == nil {
		c.Close()
		t.Errorf("the embedded service at %s still answers after the run", api.Address)
	}
}
