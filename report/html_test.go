package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

func TestWriteHTMLFile(t *testing.T) {
	t.Parallel()
	run, findings := genRunDir(t, smallRun())
	if err := WriteHTMLFile(run, findings, testKinds()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(run.Dir, timeline.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	checkWellFormed(t, page)

	for _, f := range findings {
		if !strings.Contains(page, html.EscapeString(f.Headline)) {
			t.Errorf("page lacks the headline %q", f.Headline)
		}
	}
	// The strip lists the critical finding first and links to its detail.
	strip := sliceBetween(t, page, `<nav class="strip"`, `</nav>`)
	if i, j := strings.Index(strip, "sev-critical"), strings.Index(strip, "sev-warning"); i < 0 || j < 0 || i > j {
		t.Errorf("strip does not put the critical finding before the warning:\n%s", strip)
	}
	for _, id := range []string{"finding-1", "finding-2"} {
		if !strings.Contains(strip, `href="#`+id+`"`) || !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("strip link or detail for %s missing", id)
		}
	}
	// A headline's markup is text, never markup.
	if strings.Contains(page, "<b>not bold</b>") {
		t.Error("a finding's headline was inserted as HTML")
	}

	for _, want := range []string{
		"multixact-storm", "PostgreSQL 16.4", "ci-runner-7", "2025-03-14 03:07:00 UTC", // header
		"deadlock_detected", "40P01", "pool-timeout", // errors by SQLSTATE
		"UPDATE stock SET qty = qty - 1",       // commands
		"autovacuum_vacuum_cost_limit", "2000", // settings diff
		"hold-snapshot", "rolled back", "did not run", // events
		"pid 4242, xid 771234", // an event's detail in words, as the terminal says it
		"changed (autovacuum_naptime 10s, autovacuum_vacuum_cost_limit (new 2000, old 200))",
		"pg_stat_statements is not installed",     // sampler notes
		"pg_stat_activity: 1 of 300 reads failed", // gaps are said, not hidden
	} {
		if !strings.Contains(page, html.EscapeString(want)) {
			t.Errorf("page lacks %q", want)
		}
	}

	if strings.Contains(page, html.EscapeString(`"pid": 4242`)) {
		t.Error("an event's detail is shown as JSON, not in words")
	}

	data := pageDataOf(t, page)
	wantCharts := []string{"throughput", "aas", "latency", "connections", "slru", "horizon", "hostcpu", "hostdisk", "firedrill"}
	if len(data.Charts) != len(wantCharts) {
		t.Fatalf("got %d charts, want %d", len(data.Charts), len(wantCharts))
	}
	for i, c := range data.Charts {
		if c.ID != wantCharts[i] {
			t.Errorf("chart %d is %s, want %s", i, c.ID, wantCharts[i])
		}
		if c.NoData != "" || len(c.Series) == 0 {
			t.Errorf("chart %s has no data (%q) in a run that sampled everything", c.ID, c.NoData)
		}
		for _, s := range c.Series {
			if s.X >= len(data.Xs) || s.Col >= len(data.Cols) || len(data.Cols[s.Col]) != len(data.Xs[s.X]) {
				t.Errorf("chart %s series %s: column %d does not fit time axis %d", c.ID, s.Label, s.Col, s.X)
			}
		}
	}
	aas := data.Charts[1]
	if got := aas.Series[0].Label; got != "CPU" {
		t.Errorf("AAS bottom series is %q, want CPU", got)
	}
	// 12 waits: the top 8 on their own, 4 as other; plus CPU and the vCPU line.
	if len(aas.Series) != 1+8+1+1 || !strings.HasPrefix(aas.Series[9].Label, "other (4") {
		t.Errorf("AAS series = %v, want CPU, 8 waits, other (4 waits), host vCPUs", seriesLabels(aas.Series))
	}
	if got := aas.Series[1].Label; got != "LWLock:MultiXactMemberSLRU" {
		t.Errorf("AAS largest wait is %q, want LWLock:MultiXactMemberSLRU", got)
	}
	if len(data.Events) != 2 || data.Events[0].Name != "hold-snapshot" || data.Events[0].Start != 100 || data.Events[0].End != 200 {
		t.Errorf("event bands = %+v", data.Events)
	}
	if len(data.Findings) != 2 || data.Findings[0].Severity != diagnose.Critical {
		t.Errorf("finding bands = %+v", data.Findings)
	}
	// Both workloads tick together, so they share one time axis.
	if tp := data.Charts[0]; tp.Series[0].X != tp.Series[1].X {
		t.Error("workloads with the same ticks do not share a time axis")
	}
}

// TestWriteHTMLNothingRecorded is a run killed before anything was
// recorded: the page still renders and says why each chart is empty.
func TestWriteHTMLNothingRecorded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := timeline.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m := timeline.Manifest{Format: timeline.Format, Name: "killed", Status: timeline.StatusFailed, Error: "server exited: FATAL could not map shared memory",
		Target: timeline.Target{Kind: "postgres", Address: "db.internal:5432", ServerVersion: "15.6"}}
	if err := timeline.WriteJSON(dir, timeline.ManifestFile, m); err != nil {
		t.Fatal(err)
	}
	run, err := openRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, run, nil, testKinds()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	checkWellFormed(t, page)
	for _, want := range []string{
		"No findings.", "could not map shared memory",
		"no data: no workload intervals were recorded (the run failed: server exited",
		"not charted: no samplers ran in this run", // the database's charts, each left out with one line
		"the run has no summary.json",
	} {
		if !strings.Contains(page, html.EscapeString(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, `class="plot"`) {
		t.Error("a chart without data got a canvas placeholder")
	}
}

// TestWriteHTMLSamplerNotes: a chart whose sampler ran but could not read
// is left out, with one line saying what the sampler said.
func TestWriteHTMLSamplerNotes(t *testing.T) {
	t.Parallel()
	run, findings := genRunDir(t, quickRun())
	// Drop the SLRU samples and say why, as a sampler on PostgreSQL 12 would.
	kept := run.Samples[:0]
	for _, s := range run.Samples {
		if s.Source != "pg_stat_slru" {
			kept = append(kept, s)
		}
	}
	run.Samples = kept
	for i := range run.Manifest.Samplers {
		if run.Manifest.Samplers[i].Name == "pg_stat_slru" {
			run.Manifest.Samplers[i].Notes = "pg_stat_slru needs PostgreSQL 13 or newer"
		}
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, run, findings, testKinds()); err != nil {
		t.Fatal(err)
	}
	if want := "not charted: pg_stat_slru: pg_stat_slru needs PostgreSQL 13 or newer"; !strings.Contains(buf.String(), want) {
		t.Errorf("page lacks %q", want)
	}
	if strings.Contains(buf.String(), `data-chart="slru"`) {
		t.Error("the SLRU chart without data still takes a place on the page")
	}
}

// TestWriteHTMLHostileText: names and messages come from scenarios and
// servers; none of them may end the data blob or inject markup.
func TestWriteHTMLHostileText(t *testing.T) {
	t.Parallel()
	run, findings := genRunDir(t, quickRun())
	evil := `</script><script>alert(1)</script><!--`
	run.Manifest.Name = evil
	run.Manifest.Workloads[0].Name = evil
	for i := range run.Intervals {
		if run.Intervals[i].Workload == "orders" {
			run.Intervals[i].Workload = evil
		}
	}
	findings[0].Headline = evil
	findings[0].References = []string{"javascript:alert(1)"}
	run.Marks[0].Event = evil
	var buf bytes.Buffer
	if err := WriteHTML(&buf, run, findings, testKinds()); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "<script>alert") || strings.Contains(page, `href="javascript:`) {
		t.Error("hostile text reached the page as markup")
	}
	checkWellFormed(t, page)
	data := pageDataOf(t, page)
	if data.Events[0].Name != evil || data.Charts[0].Series[0].Label != evil {
		t.Error("hostile text did not survive the data blob intact")
	}
}

func TestWriteHTMLFileError(t *testing.T) {
	t.Parallel()
	run, findings := genRunDir(t, quickRun())
	run.Dir = filepath.Join(run.Dir, "missing")
	err := WriteHTMLFile(run, findings, testKinds())
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteHTMLFile into a missing directory: %v, want a not-exist error", err)
	}
}

func TestAssetsInlineable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"uPlot.iife.min.js", "uPlot.min.css", "report.js", "report.css", "uPlot.LICENSE"} {
		b, err := htmlAssets.ReadFile("assets/" + name)
		if err != nil {
			t.Fatal(err)
		}
		low := strings.ToLower(string(b))
		if strings.Contains(low, "</script") || strings.Contains(low, "</style") {
			t.Errorf("%s contains an end tag", name)
		}
		if strings.Contains(low, "http://") && name == "report.js" || strings.Contains(low, "@import") || strings.Contains(low, "url(http") {
			t.Errorf("%s would fetch from the network", name)
		}
	}
}

// --- helpers ---------------------------------------------------------------

// htmlData mirrors the JSON blob, as much as the tests read.
type htmlData struct {
	Duration float64     `json:"duration"`
	Xs       [][]float64 `json:"xs"`
	Cols     [][]*float64
	Charts   []struct {
		ID     string `json:"id"`
		NoData string `json:"nodata"`
		Series []chartSeries
	} `json:"charts"`
	Events []struct {
		Name  string  `json:"name"`
		Start float64 `json:"t0"`
		End   float64 `json:"t1"`
	} `json:"events"`
	Findings []struct {
		Severity string `json:"severity"`
	} `json:"findings"`
}

type chartSeries struct {
	Label string `json:"label"`
	X     int    `json:"x"`
	Col   int    `json:"col"`
}

func seriesLabels(ss []chartSeries) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Label)
	}
	return out
}

func pageDataOf(t *testing.T, page string) htmlData {
	t.Helper()
	blob := sliceBetween(t, page, `<script type="application/json" id="report-data">`, `</script>`)
	var d htmlData
	if err := json.Unmarshal([]byte(blob), &d); err != nil {
		t.Fatalf("data blob: %v", err)
	}
	return d
}

func sliceBetween(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("no %q in the page", from)
	}
	s = s[i+len(from):]
	j := strings.Index(s, to)
	if j < 0 {
		t.Fatalf("no %q after %q", to, from)
	}
	return s[:j]
}

var rawText = regexp.MustCompile(`(?is)(<(script|style)\b[^>]*>)(.*?)(</(script|style)>)`)

// checkWellFormed parses the page as XML after emptying script and style
// elements (raw text in HTML), which catches unclosed or crossed tags,
// bad attributes and duplicate ids.
func checkWellFormed(t *testing.T, page string) {
	t.Helper()
	if !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Error("page does not start with <!DOCTYPE html>")
	}
	stripped := rawText.ReplaceAllString(page, "$1$4")
	dec := xml.NewDecoder(strings.NewReader(stripped))
	dec.Strict = true
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	ids := map[string]bool{}
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			line, _ := dec.InputPos()
			lines := strings.Split(stripped, "\n")
			ctx := ""
			if line-1 < len(lines) {
				ctx = lines[line-1]
				if len(ctx) > 300 {
					ctx = ctx[:300]
				}
			}
			t.Fatalf("page is not well-formed: %v\nline %d: %s", err, line, ctx)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			for _, a := range tok.Attr {
				if a.Name.Local == "id" {
					if ids[a.Value] {
						t.Errorf("duplicate id %q", a.Value)
					}
					ids[a.Value] = true
				}
			}
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Errorf("page ends %d elements deep", depth)
	}
}

// BenchmarkWriteHTML renders an hour of one-second ticks for a dozen
// workloads with every source sampled; it reports the page's size.
func BenchmarkWriteHTML(b *testing.B) {
	run, findings := genRunDir(b, bigRun())
	var buf bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		if err := WriteHTML(&buf, run, findings, testKinds()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "html-bytes")
}
