package promexport_test

// An external test package: these tests run firedrill run through
// the registration (package kinds), whose PostgreSQL backend offers firedrill pgbench, which
// feeds this package's exporter.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/promexport"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// servedNames adds the metric names a scrape serves, as PromQL names
// them (a histogram's _bucket, _sum and _count), with their label names.
func servedNames(families map[string]*dto.MetricFamily, into map[string]map[string]bool) {
	add := func(name string, labels ...string) {
		if into[name] == nil {
			into[name] = map[string]bool{}
		}
		for _, l := range labels {
			into[name][l] = true
		}
	}
	for name, f := range families {
		var labels []string
		for _, m := range f.Metric {
			for _, l := range m.Label {
				labels = append(labels, l.GetName())
			}
		}
		add(name, labels...)
		if f.GetType() == dto.MetricType_HISTOGRAM {
			add(name+"_bucket", append(labels, "le")...)
			add(name+"_sum", labels...)
			add(name+"_count", labels...)
		}
	}
}

// liveRun runs a scenario of testdata on its embedded server with an
// exporter on a free port, and returns a scrape taken as soon as
// transactions are counted, one taken two seconds later, the last one
// after the run, and the names served by any scrape (every 300 ms until
// the run ends: series of events, such as Redis's latency monitor's,
// are there only in the intervals that had one).
func liveRun(t *testing.T, file string) (first, second, final map[string]*dto.MetricFamily, served map[string]map[string]bool) {
	t.Helper()
	first, second, final, served, _ = liveRunScrapes(t, file)
	return first, second, final, served
}

// liveRunScrapes is liveRun that also returns every scrape it took, in
// order.
func liveRunScrapes(t *testing.T, file string) (first, second, final map[string]*dto.MetricFamily, served map[string]map[string]bool, scrapes []map[string]*dto.MetricFamily) {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("testdata", file), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	be, err := kinds.Registry().Resolve(sc, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []promexport.Names
	if n, ok := be.(promexport.Named); ok {
		names = append(names, n.MetricNames())
	}
	exp := promexport.New("test", names...)
	srv, err := promexport.Listen("127.0.0.1:0", exp)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	url := srv.URL()
	var log strings.Builder
	var logMu sync.Mutex
	ropts := runner.Options{
		Scenario: sc, Backends: kinds.Registry(), OutDir: t.TempDir(), Version: "test",
		Log: writerFunc(func(p []byte) (int, error) { logMu.Lock(); defer logMu.Unlock(); return log.Write(p) }),
		OnStart: func(dir string) {
			exp.Start(promexport.Labels{Scenario: sc.Name, RunID: filepath.Base(dir), Backend: be.Kind()}, sc.Duration)
		},
		OnTick: exp.Tick,
		OnMark: exp.Mark,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		res *runner.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := runner.Run(ctx, ropts)
		done <- result{res, err}
	}()
	failed := func(format string, args ...any) {
		t.Helper()
		cancel()
		<-done
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf(format+"\nrun log:\n%s", append(args, log.String())...)
	}
	// Before the load starts (server start, setup) the endpoint answers
	// with nothing; then the counters appear.
	deadline := time.Now().Add(90 * time.Second)
	for {
		first = scrape(t, url)
		if n, _ := sum(first, "firedrill_transactions_total", nil); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			failed("no transaction counted on %s within 90 s", url)
		}
		select {
		case r := <-done:
			t.Fatalf("the run ended before a transaction was counted: %v", r.err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	served = map[string]map[string]bool{}
	scrapes = append(scrapes, first)
	servedNames(first, served)
	// Scrape all along: a series that a sampler serves only while
	// something happens (lock waits) must not fall between two scrapes.
	for until := time.Now().Add(2 * time.Second); time.Now().Before(until); time.Sleep(300 * time.Millisecond) {
		f := scrape(t, url)
		scrapes = append(scrapes, f)
		servedNames(f, served)
	}
	second = scrape(t, url)
	scrapes = append(scrapes, second)
	servedNames(second, served)
	var r result
	for running := true; running; {
		select {
		case r = <-done:
			running = false
		case <-time.After(300 * time.Millisecond):
			f := scrape(t, url)
			scrapes = append(scrapes, f)
			servedNames(f, served)
		}
	}
	if r.err != nil || r.res == nil {
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("run: %v\n%s", r.err, log.String())
	}
	run, err := timeline.Open(r.res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// The final diagnosis, as firedrill run serves it (firedrill_finding).
	exp.Findings(diagnose.DiagnoseTargets(run, kinds.Registry().Rules))
	exp.Finish()
	final = scrape(t, url)
	scrapes = append(scrapes, final)
	servedNames(final, served)
	// The last scrape's counters are the sums of the intervals the run
	// recorded: the exporter missed none and counted none twice.
	for _, w := range run.Manifest.Workloads {
		var count, failed, latencies int64
		for _, iv := range run.WorkloadIntervals(w.Name) {
			count += iv.Count
			failed += iv.Failed
			latencies += iv.Latency.Count()
		}
		labels := map[string]string{"workload": w.Name}
		for _, c := range []struct {
			name string
			want int64
		}{{"firedrill_transactions_total", count}, {"firedrill_transactions_failed_total", failed}, {"firedrill_latency_seconds", latencies}} {
			if n, _ := sum(final, c.name, labels); n != float64(c.want) {
				t.Errorf("%s: %s{workload=%q} %v, the timeline's intervals %d", file, c.name, w.Name, n, c.want)
			}
		}
	}
	return first, second, final, served, scrapes
}

// The scrape helpers exporter_test.go shares (export_test.go).
var (
	scrape = promexport.Scrape
	sum    = promexport.Sum
)

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A real run on an embedded PostgreSQL, scraped while it runs with
// Prometheus's text parser: the counters move between two scrapes, the
// sampled series are there with their labels, the run's labels are on
// every series, and the last scrape says the run is over.
func TestLiveRunScrapes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	first, second, final, _ := liveRun(t, "postgres.yaml")

	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"firedrill_transactions_total", map[string]string{"workload": "hot"}},
		{"firedrill_latency_seconds", map[string]string{"workload": "hot"}}, // its count
		{"firedrill_transactions_total", map[string]string{"workload": "flaky"}},
	} {
		a, _ := sum(first, c.name, c.labels)
		b, _ := sum(second, c.name, c.labels)
		if !(b > a) {
			t.Errorf("%s%v: %v then %v two seconds later, want it to grow", c.name, c.labels, a, b)
		}
	}
	// The flaky workload's division by zero, counted by SQLSTATE and kind.
	if n, ok := sum(final, "firedrill_errors_total", map[string]string{"workload": "flaky", "code": "22012", "kind": "transaction"}); !ok || n == 0 {
		t.Errorf("firedrill_errors_total{code=22012,kind=transaction} = %v (found %v), want the flaky workload's failures", n, ok)
	}
	if n, ok := sum(final, "firedrill_offered_rate_per_second", map[string]string{"workload": "flaky"}); !ok || n != 40 {
		t.Errorf("offered rate %v (found %v), want 40", n, ok)
	}
	// Sampled series: the event's held row makes the hot workload wait
	// on its transaction id.
	// Read during the load (the last reading is after it).
	if n, ok := sum(second, "firedrill_pg_stat_activity_connections", nil); !ok || n < 1 {
		t.Errorf("firedrill_pg_stat_activity_connections = %v (found %v) during the run", n, ok)
	}
	sawWait := false
	for _, fams := range []map[string]*dto.MetricFamily{first, second, final} {
		if _, ok := sum(fams, "firedrill_pg_stat_activity_wait_sessions", map[string]string{"type": "Lock", "event": "transactionid"}); ok {
			sawWait = true
		}
	}
	if !sawWait {
		t.Errorf("no scrape had firedrill_pg_stat_activity_wait_sessions{type=Lock,event=transactionid}")
	}
	// Every series has the run's labels.
	for name, f := range final {
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["scenario"] != "prom-postgres" || labels["backend"] != "postgres" || !strings.HasSuffix(labels["run_id"], "-prom-postgres") {
				t.Errorf("%s%v: want the run's labels", name, labels)
				break
			}
		}
	}
	if n, _ := sum(final, "firedrill_run_finished", nil); n != 1 {
		t.Errorf("firedrill_run_finished = %v after the run, want 1", n)
	}
	// The latency histogram's buckets agree with its count.
	for _, m := range final["firedrill_latency_seconds"].GetMetric() {
		h := m.GetHistogram()
		b := h.GetBucket()
		// The text parser keeps the +Inf bucket.
		if len(b) < len(promexport.LatencyBuckets) || b[len(b)-1].GetCumulativeCount() != h.GetSampleCount() || h.GetSampleSum() <= 0 {
			t.Errorf("latency histogram: %d buckets, last %d of %d, sum %v", len(b), b[len(b)-1].GetCumulativeCount(), h.GetSampleCount(), h.GetSampleSum())
		}
	}
}

// dashboard is what the test reads of a Grafana dashboard.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr   string `json:"expr"`
			Legend string `json:"legendFormat"`
		} `json:"targets"`
	} `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// metricName finds what a PromQL expression names as metrics: firedrill's
// names (the dashboard queries nothing else).
var metricName = regexp.MustCompile(`\bfiredrill_[a-zA-Z0-9_]+`)

// selector, labelMatcher, grouping and legendLabel find the labels a
// query and its legend use: metric{a="…",b=~"…"}, by (a, b), {{a}}.
var (
	selector     = regexp.MustCompile(`\b(firedrill_[a-zA-Z0-9_]+)\{([^}]*)\}`)
	labelMatcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	grouping     = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	legendLabel  = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
)

// The Grafana dashboard queries only what the endpoint serves: every
// panel's, annotation's and variable's PromQL names firedrill metrics,
// each served by a real run of its kind of database (scraped live).
func TestGrafanaDashboardQueriesServedMetrics(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts servers")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "grafana", "firedrill.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("contrib/grafana/firedrill.json: %v", err)
	}
	type query struct{ where, expr, legend string }
	var queries []query
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries = append(queries, query{"panel " + p.Title, tg.Expr, tg.Legend})
		}
	}
	for _, a := range d.Annotations.List {
		queries = append(queries, query{"annotation " + a.Name, a.Expr, ""})
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			queries = append(queries, query{"variable " + v.Name, fmt.Sprint(q["query"]), ""})
		}
	}

	served := map[string]map[string]bool{}
	for _, file := range []string{"postgres.yaml", "mariadb.yaml", "redis.yaml"} {
		_, _, _, names := liveRun(t, file)
		for name, labels := range names {
			if served[name] == nil {
				served[name] = map[string]bool{}
			}
			maps.Copy(served[name], labels)
		}
	}
	for _, q := range queries {
		names := metricName.FindAllString(q.expr, -1)
		if len(names) == 0 {
			t.Errorf("%s: %q names no firedrill metric", q.where, q.expr)
		}
		labels := map[string]bool{} // of every metric the query reads
		for _, n := range names {
			if served[n] == nil {
				t.Errorf("%s: %s is not served by firedrill's /metrics (%q)", q.where, n, q.expr)
			}
			maps.Copy(labels, served[n])
		}
		// A selector's, a grouping's or the legend's label the series do
		// not have would select or show nothing.
		for _, m := range selector.FindAllStringSubmatch(q.expr, -1) {
			for _, l := range labelMatcher.FindAllStringSubmatch(m[2], -1) {
				if served[m[1]] != nil && !served[m[1]][l[1]] {
					t.Errorf("%s: %s has no label %q (%q)", q.where, m[1], l[1], q.expr)
				}
			}
		}
		var used []string
		for _, g := range grouping.FindAllStringSubmatch(q.expr, -1) {
			for _, l := range strings.Split(g[1], ",") {
				used = append(used, strings.TrimSpace(l))
			}
		}
		for _, l := range legendLabel.FindAllStringSubmatch(q.legend, -1) {
			used = append(used, l[1])
		}
		for _, l := range used {
			if len(labels) > 0 && !labels[l] {
				t.Errorf("%s: label %q is on none of %v (%q, legend %q)", q.where, l, names, q.expr, q.legend)
			}
		}
	}
	if t.Failed() {
		t.Logf("served: %s", strings.Join(slices.Sorted(maps.Keys(served)), " "))
	}
}
