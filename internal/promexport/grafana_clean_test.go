package promexport_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// rowKinds are the dashboard's rows of one kind of database, by the
// start of their title; the other rows (client, host) are every kind's.
var rowKinds = map[string]string{"PostgreSQL": "postgres", "MariaDB": "mariadb", "Redis": "redis"}

// panelQuery is one panel target's PromQL, with the row it is in.
type panelQuery struct{ row, panel, expr string }

// dashboardQueries reads contrib/grafana/firedrill.json: its panels'
// queries, each with its row, and its annotations' queries.
func dashboardQueries(t *testing.T) (panels []panelQuery, annotations []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "contrib", "grafana", "firedrill.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("contrib/grafana/firedrill.json: %v", err)
	}
	row := ""
	for _, p := range d.Panels {
		if p.Type == "row" {
			row = p.Title
			continue
		}
		for _, tg := range p.Targets {
			panels = append(panels, panelQuery{row, p.Title, tg.Expr})
		}
	}
	for _, a := range d.Annotations.List {
		annotations = append(annotations, a.Expr)
	}
	return panels, annotations
}

// rowKind is the kind of database a row shows, "" for every kind's.
func rowKind(row string) string {
	for prefix, kind := range rowKinds {
		if strings.HasPrefix(row, prefix) {
			return kind
		}
	}
	return ""
}

var (
	// vectorLiteral is PromQL's vector(0): a series whatever was served.
	vectorLiteral = regexp.MustCompile(`\bvector\s*\(`)
	// matcherText is one label matcher of a selector: name, operator, value.
	matcherText = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	// bareName is a metric name not followed by a selector's braces.
	bareName = regexp.MustCompile(`\b(firedrill_[a-zA-Z0-9_]+)\b(\s*\{)?`)
)

// orBranches splits a PromQL expression at its top-level "or"s.
func orBranches(expr string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(expr); i++ {
		switch expr[i] {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth--
		case 'o':
			if depth == 0 && strings.HasPrefix(expr[i:], "or") && i > 0 && expr[i-1] == ' ' && i+2 < len(expr) && (expr[i+2] == ' ' || expr[i+2] == '(') {
				out = append(out, expr[start:i])
				start = i + 2
			}
		}
	}
	return append(out, expr[start:])
}

// hasData says whether a panel's query returns a series over the run
// the scrapes are of, for the queries the dashboard has: an "or" has
// data when a branch has; a branch (selectors under rate, sum by,
// histogram_quantile, arithmetic with scalars) has data when each of
// its selectors matches a series served by some scrape, or when it is a
// vector() literal alone. Dashboard variables match anything.
func hasData(expr string, scrapes []map[string]*dto.MetricFamily) bool {
	expr = strings.NewReplacer("$run_id", ".*", "$workload", ".*", "$scenario", ".*", "$__rate_interval", "1m").Replace(expr)
	for _, branch := range orBranches(expr) {
		names := bareName.FindAllStringSubmatch(branch, -1)
		if len(names) == 0 {
			if vectorLiteral.MatchString(branch) {
				return true
			}
			continue
		}
		all := true
		for _, m := range selector.FindAllStringSubmatch(branch, -1) {
			all = all && matches(m[1], m[2], scrapes)
		}
		for _, n := range names {
			if n[2] == "" { // no braces: the name alone
				all = all && matches(n[1], "", scrapes)
			}
		}
		if all {
			return true
		}
	}
	return false
}

// matches says whether a scrape served a series of the metric (a
// histogram's _bucket, _sum and _count included) whose labels satisfy
// the selector's matchers.
func matches(name, matchers string, scrapes []map[string]*dto.MetricFamily) bool {
	family := name
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		family = strings.TrimSuffix(family, suffix)
	}
	for _, fams := range scrapes {
		for _, n := range []string{name, family} {
			for _, m := range fams[n].GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if satisfies(labels, matchers) {
					return true
				}
			}
		}
	}
	return false
}

func satisfies(labels map[string]string, matchers string) bool {
	for _, m := range matcherText.FindAllStringSubmatch(matchers, -1) {
		v := labels[m[1]]
		re := regexp.MustCompile("^(?:" + m[3] + ")$")
		var ok bool
		switch m[2] {
		case "=":
			ok = v == m[3]
		case "!=":
			ok = v != m[3]
		case "=~":
			ok = re.MatchString(v)
		case "!~":
			ok = !re.MatchString(v)
		}
		if !ok {
			return false
		}
	}
	return true
}

// The evaluator above can fail: a query of a series that is not served,
// or served without the label value selected, has no data; "or
// vector(0)" has.
func TestHasData(t *testing.T) {
	t.Parallel()
	scrapes := []map[string]*dto.MetricFamily{fakeScrape()}
	for _, c := range []struct {
		expr string
		want bool
	}{
		{`firedrill_transactions_total{run_id=~"$run_id"}`, true},
		{`sum by (workload) (rate(firedrill_transactions_total{run_id=~"$run_id",workload="w"}[$__rate_interval]))`, true},
		{`firedrill_transactions_total{workload="other"}`, false},                // no such label value
		{`firedrill_errors_total{run_id=~"$run_id"}`, false},                     // not served
		{`sum(rate(firedrill_errors_total[1m])) or vector(0)`, true},             // the zero line
		{`firedrill_errors_total or firedrill_transactions_total * 0`, true},     // the zero of a served series
		{`firedrill_errors_total{a="1"} or firedrill_clients{x="y"} * 0`, false}, // neither
		{`histogram_quantile(0.99, sum by (le) (rate(firedrill_latency_seconds_bucket[1m])))`, true},
	} {
		if got := hasData(c.expr, scrapes); got != c.want {
			t.Errorf("hasData(%q) = %v, want %v", c.expr, got, c.want)
		}
	}
}

// fakeScrape is a scrape of one workload's counter and histogram.
func fakeScrape() map[string]*dto.MetricFamily {
	name := func(s string) *string { return &s }
	lp := func(k, v string) *dto.LabelPair { return &dto.LabelPair{Name: name(k), Value: name(v)} }
	one := 1.0
	return map[string]*dto.MetricFamily{
		"firedrill_transactions_total": {Name: name("firedrill_transactions_total"), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{lp("run_id", "r"), lp("workload", "w")}, Counter: &dto.Counter{Value: &one}}}},
		"firedrill_latency_seconds": {Name: name("firedrill_latency_seconds"), Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{lp("run_id", "r"), lp("workload", "w")}, Histogram: &dto.Histogram{}}}},
	}
}

// A clean run of each kind (no event, no error) leaves no panel of the
// dashboard empty: every panel of the client and host rows and of the
// kind's row returns a series over the run (a zero line where nothing
// happened: firedrill_findings is served at zero, errors and latency
// events are "or" a zero), and an annotation shows the findings.
func TestGrafanaDashboardCleanRunHasNoEmptyPanel(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts servers")
	}
	panels, annotations := dashboardQueries(t)
	findingsAnnotated := false
	for _, a := range annotations {
		findingsAnnotated = findingsAnnotated || strings.Contains(a, "firedrill_finding")
	}
	if !findingsAnnotated {
		t.Errorf("no annotation shows firedrill_finding: %q", annotations)
	}
	for kind, file := range map[string]string{"postgres": "clean-postgres.yaml", "mariadb": "clean-mariadb.yaml", "redis": "clean-redis.yaml"} {
		_, _, _, _, scrapes := liveRunScrapes(t, file)
		byPanel := map[string]bool{} // row + panel → has data
		for _, q := range panels {
			if k := rowKind(q.row); k != "" && k != kind {
				continue
			}
			key := q.row + " / " + q.panel
			byPanel[key] = byPanel[key] || hasData(q.expr, scrapes)
		}
		for p, ok := range byPanel {
			if !ok {
				t.Errorf("%s (%s): panel %q shows no data", file, kind, p)
			}
		}
		// The clean run has no finding, and says so with zeros.
		if n, ok := sum(scrapes[len(scrapes)-1], "firedrill_findings", map[string]string{"severity": "critical"}); !ok || n != 0 {
			t.Errorf("%s: firedrill_findings{severity=critical} = %v (served %v), want 0", file, n, ok)
		}
	}
}
