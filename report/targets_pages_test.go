package report

import (
	"bytes"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
	"github.com/firedrill/firedrill/timeline/timelinetest"
)

// pageCharts are the charts of a page's data blob, as its script reads
// them: id, title and how many series each draws.
func pageCharts(t *testing.T, page string) map[string]struct {
	Title  string
	Series int
} {
	t.Helper()
	const open = `<script type="application/json" id="report-data">`
	_, rest, ok := strings.Cut(page, open)
	blob, _, ok2 := strings.Cut(rest, "</script>")
	if !ok || !ok2 {
		t.Fatal("the page holds no report-data")
	}
	var data struct {
		Charts []struct {
			ID     string            `json:"id"`
			Title  string            `json:"title"`
			Series []json.RawMessage `json:"series"`
		} `json:"charts"`
	}
	if err := json.Unmarshal([]byte(blob), &data); err != nil {
		t.Fatalf("report-data: %v", err)
	}
	out := map[string]struct {
		Title  string
		Series int
	}{}
	for _, c := range data.Charts {
		out[c.ID] = struct {
			Title  string
			Series int
		}{c.Title, len(c.Series)}
	}
	return out
}

// The compare page of two runs of several targets overlays each target's
// load by its own kind: PostgreSQL's active sessions for db, Redis's
// commands per second for cache, both runs on each.
func TestCompareLoadPerTarget(t *testing.T) {
	t.Parallel()
	a, fa := twoTargets(t)
	b, err := timelinetest.Compose(t.TempDir(),
		timelinetest.Part{Name: "db", Dir: recorded("healthy")},
		timelinetest.Part{Name: "cache", Dir: recorded("aof-fixed"), Clock: true})
	if err != nil {
		t.Fatal(err)
	}
	testKinds().Fill(b)
	fb := diagnose.DiagnoseTargets(b, kinds.Registry().Rules)
	var page bytes.Buffer
	if err := WriteCompareHTML(&page, a, b, CompareSide{Label: "A"}, CompareSide{Label: "B"}, compareForTest(a, b, fa, fb)); err != nil {
		t.Fatal(err)
	}
	charts := pageCharts(t, page.String())
	for id, title := range map[string]string{
		"db-aas":     "db: Database load (average active sessions)",
		"cache-load": "cache: Commands processed per second",
	} {
		c, ok := charts[id]
		if !ok || c.Title != title || c.Series != 2 {
			t.Errorf("chart %s: %+v (present %v), want %q with both runs", id, c, ok, title)
		}
	}
	if _, ok := charts["aas"]; ok {
		t.Error("a load chart of the first target's kind for the whole run")
	}
}

// The errors table of a run of several names each row's target, and its
// title the kinds of error code of the targets whose workloads failed.
func TestErrorsTablePerTarget(t *testing.T) {
	t.Parallel()
	run, findings := twoTargets(t)
	if run.Summary == nil {
		t.Fatal("the composed run has no summary")
	}
	// A failure on each target: PostgreSQL's SQLSTATE, Redis's own codes.
	for i := range run.Summary.Workloads {
		w := &run.Summary.Workloads[i]
		w.Errors = append(w.Errors, timeline.ErrorSummary{Code: "X" + w.Name, Count: 3, Message: "failed " + w.Name})
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, run, findings, testKinds()); err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(page.String())
	var names []string
	for _, nt := range run.Manifest.Targets {
		names = append(names, nt.Target.ErrorCodeName())
	}
	if names[0] == names[1] {
		t.Fatalf("both targets' codes are named %q: the test needs two kinds", names[0])
	}
	if want := "Errors by " + names[0] + " and " + names[1] + "</h2>"; !strings.Contains(text, want) {
		t.Errorf("the errors table is not titled %q", want)
	}
	for _, w := range run.Manifest.Workloads {
		if row := "<tr><td>" + w.Target + "</td><td>" + w.Name + "</td><td><code>X" + w.Name; !strings.Contains(text, row) {
			t.Errorf("no errors row of %s naming its target %s", w.Name, w.Target)
		}
	}
}
