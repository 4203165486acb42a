package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
	"github.com/firedrill/firedrill/timeline/timelinetest"
)

// recorded is a recorded run of one system under diagnose/testdata.
func recorded(name string) string { return filepath.Join("..", "diagnose", "testdata", name) }

// twoTargets is a run of two targets: the PostgreSQL run healthy as "db"
// and the Redis run aof-broken (its AOF's fsync stalls) as "cache", with
// the findings each target's kind's rules make of its view.
func twoTargets(t testing.TB) (*timeline.Run, []diagnose.Finding) {
	t.Helper()
	run, err := timelinetest.Compose(t.TempDir(),
		timelinetest.Part{Name: "db", Dir: recorded("healthy")},
		timelinetest.Part{Name: "cache", Dir: recorded("aof-broken"), Clock: true})
	if err != nil {
		t.Fatal(err)
	}
	testKinds().Fill(run)
	return run, diagnose.DiagnoseTargets(run, kinds.Registry().Rules)
}

// Each target's findings are those of the run it was recorded in, alone.
func TestTargetsFindingsAsAlone(t *testing.T) {
	t.Parallel()
	_, findings := twoTargets(t)
	for target, dir := range map[string]string{"db": "healthy", "cache": "aof-broken"} {
		alone, err := openRun(recorded(dir))
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, f := range diagnose.DiagnoseTargets(alone, kinds.Registry().Rules) {
			want = append(want, f.Rule+": "+f.Headline)
		}
		for _, f := range findings {
			if f.Target == target {
				got = append(got, f.Rule+": "+f.Headline)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s's findings:\n%s\nwant, as of %s alone:\n%s", target, strings.Join(got, "\n"), dir, strings.Join(want, "\n"))
		}
	}
}

// The terminal summary lists each target's server, each workload's
// target, and names the target of each finding and event.
func TestSummaryOfTargets(t *testing.T) {
	t.Parallel()
	run, findings := twoTargets(t)
	var out strings.Builder
	if err := WriteSummary(&out, run, findings); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"2 targets\n",
		"\n  db: PostgreSQL 15.18 (embedded, 127.0.0.1:",
		"\n  cache: Redis 7.0.15 (embedded, 127.0.0.1:",
		"] cache: Redis stops while its AOF fsync is slow", // the finding names its target
		"(aof-fsync-stall, 9–23 s)",
		"cache/backup-copy",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	// Each workload's row starts with its target.
	for _, row := range []string{"db      tpcb", "cache     cache"} {
		if !strings.Contains(text, row) {
			t.Errorf("no workload row %q:\n%s", row, text)
		}
	}
}

// Live progress says what each target's sessions wait on, by its name; a
// run of one system's line says "database" as before.
func TestProgressWaitsPerTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		target, want string
	}{
		{"", "database"},
		{"db", "db"},
	} {
		var out strings.Builder
		p := &Progress{W: &out, Kinds: testKinds()}
		p.Tick(1, nil, []timeline.Sample{{Source: "pg_stat_activity", Target: tc.target, Values: map[string]float64{"aas": 3, "wait.Lock:tuple": 2, "wait.CPU": 1}}})
		want := "1.0 s  " + tc.want
		if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "top wait Lock:tuple (2)") {
			t.Errorf("target %q: %q, want %q and the top wait", tc.target, out.String(), want)
		}
	}
}

// The JSON result of a run of several lists its targets and names the
// target of each workload and finding, and validates against the schema.
func TestJSONOfTargets(t *testing.T) {
	t.Parallel()
	run, findings := twoTargets(t)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, run, findings, nil); err != nil {
		t.Fatal(err)
	}
	validateRunResult(t, buf.Bytes())
	var doc struct {
		Target  struct{ Kind string }
		Targets []struct {
			Name, Kind, Product string
			ServerVersion       string `json:"server_version"`
		}
		Workloads []struct{ Name, Target string }
		Findings  []struct{ Rule, Target string }
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Targets) != 2 || doc.Targets[0].Name != "db" || doc.Targets[0].Product != "PostgreSQL" ||
		doc.Targets[1].Name != "cache" || doc.Targets[1].Kind != "redis" || doc.Targets[1].ServerVersion != "7.0.15" || doc.Target.Kind != "postgres" {
		t.Errorf("targets %+v, target %+v", doc.Targets, doc.Target)
	}
	if len(doc.Workloads) != 2 || doc.Workloads[0].Target != "db" || doc.Workloads[1].Target != "cache" {
		t.Errorf("workloads %+v", doc.Workloads)
	}
	for _, f := range doc.Findings {
		if want := map[bool]string{true: "cache", false: "db"}[strings.HasPrefix(f.Rule, "aof") || strings.HasPrefix(f.Rule, "redis")]; f.Target != want {
			t.Errorf("finding %s names target %q, want %q", f.Rule, f.Target, want)
		}
	}
	// A run of one system has neither.
	buf.Reset()
	one, err := openRun(recorded("aof-broken"))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&buf, one, diagnose.DiagnoseTargets(one, kinds.Registry().Rules), nil); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); strings.Contains(s, `"targets"`) || strings.Contains(s, `"target": "`) {
		t.Errorf("a run of one system's result names targets:\n%s", s)
	}
}

// Compare weighs runs of several targets target by target: each target's
// counters (its kind's) and findings under its name; it refuses runs whose
// targets differ.
func TestCompareTargets(t *testing.T) {
	t.Parallel()
	a, fa := twoTargets(t)
	b, err := timelinetest.Compose(t.TempDir(),
		timelinetest.Part{Name: "db", Dir: recorded("healthy")},
		timelinetest.Part{Name: "cache", Dir: recorded("aof-fixed"), Clock: true})
	if err != nil {
		t.Fatal(err)
	}
	fb := diagnose.DiagnoseTargets(b, kinds.Registry().Rules)
	if err := CompareTargets(a, b); err != nil {
		t.Fatalf("same targets refused: %v", err)
	}
	c := compareForTest(a, b, fa, fb)
	var cacheCounters int
	for _, cc := range c.Counters {
		if cc.Target != "cache" || !strings.HasPrefix(cc.Label, "cache: ") {
			t.Errorf("counter %+v is not the cache's (only Redis declares counters)", cc)
		}
		cacheCounters++
	}
	if cacheCounters == 0 {
		t.Error("no counters of the cache")
	}
	var vanished bool
	for _, f := range c.Findings {
		if !strings.HasPrefix(f.Rule, "db/") && !strings.HasPrefix(f.Rule, "cache/") {
			t.Errorf("finding %s names no target", f.Rule)
		}
		vanished = vanished || f.Rule == "cache/aof-fsync-stall" && f.Change == FindingVanished
	}
	if !vanished {
		t.Errorf("the cache's aof-fsync-stall did not vanish: %+v", c.Findings)
	}
	if len(c.Workloads) != 2 {
		t.Errorf("workloads compared: %d", len(c.Workloads))
	}
	// Different targets are refused, with both runs' targets named.
	one, err := openRun(recorded("healthy"))
	if err != nil {
		t.Fatal(err)
	}
	swapped, err := timelinetest.Compose(t.TempDir(),
		timelinetest.Part{Name: "cache", Dir: recorded("healthy")},
		timelinetest.Part{Name: "db", Dir: recorded("aof-fixed"), Clock: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []*timeline.Run{one, swapped} {
		err := CompareTargets(a, other)
		if err == nil || !strings.Contains(err.Error(), "db (postgres), cache (redis)") {
			t.Errorf("compare with %s: %v", other.Manifest.Name, err)
		}
	}
	if err := CompareTargets(one, one); err != nil {
		t.Errorf("two runs of one system: %v", err)
	}
}

// A database threshold of one target of a run of several reads that
// target's samples ("<target>.db.<metric>"), with the measure its kind
// registered: the scenario is loaded as the command line loads it, and
// judged on a run of two targets composed from recorded ones.
func TestThresholdOfTarget(t *testing.T) {
	t.Parallel()
	run, findings := twoTargets(t)
	alone, err := openRun(recorded("healthy"))
	if err != nil {
		t.Fatal(err)
	}
	const workloads = "workloads: [{name: w, target: db, clients: 1, scripts: [{inline: \"SELECT 1;\"}]}]\n"
	sc, err := scenario.Parse("two.yaml", []byte("name: two\nduration: 10s\ntargets: {db: {kind: postgres}, cache: {kind: redis}}\n"+workloads+
		"thresholds:\n  db.db.rollbacks: \">= 0\"\n  db.db.deadlocks: \"== 0\"\n"), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	one, err := scenario.Parse("one.yaml", []byte("name: one\nduration: 10s\n"+strings.Replace(workloads, "target: db, ", "", 1)+
		"thresholds:\n  db.rollbacks: \">= 0\"\n  db.deadlocks: \"== 0\"\n"), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := EvaluateThresholds(sc.Thresholds, run, findings, everyRule())
	want := EvaluateThresholds(one.Thresholds, alone, nil, everyRule())
	for i := range got {
		if !got[i].Measurable || got[i].Measured != want[i].Measured || got[i].Pass != want[i].Pass {
			t.Errorf("%s: %+v; the run alone's %s: %+v", got[i].Metric, got[i], want[i].Metric, want[i])
		}
	}
	// The cache's view holds no pg_stat_database: PostgreSQL's measure on
	// it measures nothing, and fails.
	th := sc.Thresholds[0]
	th.Metric = "cache.db.rollbacks"
	if got := EvaluateThresholds([]scenario.Threshold{th}, run, findings, everyRule()); got[0].Measurable || got[0].Pass {
		t.Errorf("cache.db.rollbacks measured on the cache: %+v", got[0])
	}
	// A threshold no kind's table made cannot be measured.
	th.Metric, th.Measure = "db.db.rollbacks", nil
	if got := EvaluateThresholds([]scenario.Threshold{th}, run, findings, everyRule()); got[0].Measurable || !strings.Contains(got[0].Why, "no kind") {
		t.Errorf("a database threshold without a measure: %+v", got[0])
	}
}

// A target's breakdown of its workloads (an HTTP service's endpoints)
// is printed under the workloads' table, each row named by its target
// and workload; a row whose cells do not match the columns is left out.
func TestSummaryBreakdown(t *testing.T) {
	t.Parallel()
	run, findings := twoTargets(t)
	detail, err := json.Marshal(timeline.Breakdown{What: "endpoint", Columns: []string{"requests", "4xx", "p99"},
		Rows: []timeline.BreakdownRow{
			{Workload: "browse", Name: "GET /journals", Cells: []string{"120", "7", "12 ms"}},
			{Workload: "health", Name: "GET /journals", Cells: []string{"30", "0", "2.10 ms"}},
			{Workload: "bad", Name: "GET /x", Cells: []string{"1"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	run.Samples = append(run.Samples, timeline.Sample{Source: timeline.SourceBreakdown, Target: "cache", T: 30, Detail: detail})
	var out strings.Builder
	if err := WriteSummary(&out, run, findings); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"     workload       endpoint  requests  4xx      p99\n",
		"cache/browse  GET /journals       120    7    12 ms\n",
		"cache/health  GET /journals        30    0  2.10 ms\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "GET /x") {
		t.Errorf("a row with the wrong number of cells was printed:\n%s", text)
	}
}
