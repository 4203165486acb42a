package htmlpage

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"

	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// CompareTemplateFile is the compare page's template in the asset FS; the
// page shares the report's script and style.
const CompareTemplateFile = "compare.html.tmpl"

// Side is one run of a comparison as the compare page names it.
type Side struct {
	Label  string // the run's name (its directory's), shown in headings and legends
	Dir    string // the run directory, as given
	Report string // link to its report.html, relative to the page; "" = none
}

// comparePage is what the compare template lays out.
type comparePage struct {
	assets
	Version string
	A, B    sideView
	Verdict Verdict
	Charts  []chartSpec
	Data    template.JS
}

type sideView struct {
	Side
	Role     string // "A" (the baseline) or "B"
	Class    string // side-a, side-b: the run's colour
	M        timeline.Manifest
	Started  string
	Duration float64
}

// The two runs' colours: A the palette's blue, B its orange.
var sideColors = [2]string{palette[0], palette[1]}

// Verdict is a comparison laid out for the page: what report.Comparison
// says, as text cells with the class that colours them.
type Verdict struct {
	Method    string // how the medians and the test were made, one line
	Notes     []string
	Workloads []VerdictWorkload
	OnlyIn    []string // "workload x ran only in A"
	Counters  []VerdictPair
	Findings  []VerdictFinding
	Settings  []VerdictPair
	Text      string // the terminal's text, for copying into a ticket
}

// VerdictWorkload is one workload's verdict table and what changed in it.
type VerdictWorkload struct {
	Name    string
	Blocks  string // "15 + 15 blocks of 3 s after a 5 s / 5 s warm-up"
	Rows    []VerdictRow
	Stalls  string
	Changes []string
	Scripts []VerdictScript
	Notes   []string
}

// VerdictRow is one metric: each run's median, the change with its
// interval, the verdict; Class is better, worse, unsure or same.
type VerdictRow struct {
	Metric, A, B, Change, Verdict string
	Sentence                      string // the verdict in full, as a tooltip
	Class                         string
}

// VerdictScript is one script file whose commands differ.
type VerdictScript struct {
	Title   string // "cart-random.sql → cart-sorted.sql"
	Summary string // "3 removed, 6 added"
	Lines   []VerdictLine
}

// VerdictLine is one command of a script diff; Sign is "−" or "+".
type VerdictLine struct{ Sign, Text string }

// VerdictFinding is one rule's findings in both runs; Class is better
// (vanished), worse (appeared) or same.
type VerdictFinding struct {
	Change, Severity, Rule, Counts, Headline, Class string
}

// VerdictPair is a named value in each run (a setting, a counter).
type VerdictPair struct{ Name, A, B string }

// RenderCompare writes a page that puts the comparison's verdict tables
// over both runs' timelines overlaid (each from its own start): per
// workload throughput and latency, and the database load. The runs are
// named by their sides' labels in headings and legends. Nothing is
// written if it cannot be built.
func RenderCompare(w io.Writer, assetsFS fs.FS, a, b *timeline.Run, sa, sb Side, v Verdict, kinds present.Kinds) error {
	tmpl, as, err := loadTemplate(assetsFS, CompareTemplateFile)
	if err != nil {
		return err
	}
	p := &comparePage{assets: as, Version: a.Manifest.Version, Verdict: v}
	p.A = sideView{Side: sa, Role: "A", Class: "side-a", M: a.Manifest, Started: startedText(a), Duration: runDuration(a)}
	p.B = sideView{Side: sb, Role: "B", Class: "side-b", M: b.Manifest, Started: startedText(b), Duration: runDuration(b)}
	cd := compareCharts([2]*timeline.Run{a, b}, [2]string{sa.Label, sb.Label}, kinds)
	p.Charts = cd.Charts
	data := pageData{Duration: max(p.A.Duration, p.B.Duration), Xs: cd.Xs, Cols: cd.Cols, Charts: cd.Charts,
		Events: []eventBand{}, Findings: []findingBand{}}
	if p.Data, err = encodeData(data); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, p); err != nil {
		return fmt.Errorf("render compare page: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write compare page: %w", err)
	}
	return nil
}

// compareCharts overlays the runs: for each workload (in A's order, then
// B's own), throughput and latency; then the database's load, one chart
// per target in runs of several.
func compareCharts(runs [2]*timeline.Run, labels [2]string, kinds present.Kinds) chartData {
	var d chartData
	var wl [2]map[string]workloadData
	var order []string
	for s, run := range runs {
		wl[s] = map[string]workloadData{}
		for _, w := range workloadColumns(&d, run) {
			order = append(order, w.name)
			wl[s][w.name] = w
		}
	}
	order = uniq(order)
	for i, name := range order {
		tps := chartSpec{
			ID: fmt.Sprintf("tps-%d", i), Title: "Throughput: " + name,
			Help: "Successful transactions per second, each run from its own start.",
			Axes: []axisSpec{{Label: "tx/s", Unit: "rate", Text: "tx/s", Min: ptr(0)}},
		}
		lat := chartSpec{
			ID: fmt.Sprintf("latency-%d", i), Title: "Latency: " + name,
			Help: "max per tick (dotted), p99 (bold) and p50 (pale), each run from its own start; \"running\" (dashed) is the oldest transaction still running where it had waited longer than any that finished: a stall while it lasts.",
			Axes: []axisSpec{{Label: "ms", Unit: "ms", Min: ptr(0)}},
			Log:  true,
		}
		for s := range runs {
			w, ok := wl[s][name]
			if !ok {
				continue
			}
			tps.Series = append(tps.Series, seriesSpec{Label: labels[s], X: w.x, Col: w.tps, Color: sideColors[s], Width: 1.5})
			lat.Series = append(lat.Series,
				seriesSpec{Label: labels[s] + " p99", X: w.x, Col: w.p99, Color: sideColors[s], Width: 1.5},
				seriesSpec{Label: labels[s] + " p50", X: w.x, Col: w.p50, Color: sideColors[s], Width: 1, Alpha: 0.4},
				seriesSpec{Label: labels[s] + " max", X: w.x, Col: w.maxLat, Color: sideColors[s], Style: "dot", Width: 1, Alpha: 0.8})
			if w.anyStalled {
				lat.Series = append(lat.Series, seriesSpec{Label: labels[s] + " running", X: w.x, Col: w.stalled, Color: sideColors[s], Style: "dash", Width: 2})
			}
		}
		d.Charts = append(d.Charts, tps, lat)
	}
	if len(order) == 0 {
		d.Charts = append(d.Charts, chartSpec{ID: "tps", Title: "Throughput", NoData: "neither run recorded workload intervals"})
	}
	names := runs[0].Manifest.TargetNames()
	if len(names) == 0 {
		d.Charts = append(d.Charts, compareLoadChart(&d, runs, labels, kinds))
		return d
	}
	// Runs of several targets (the same ones: CompareTargets) overlay
	// each target's load, from both runs' views of it, by its own kind.
	for _, name := range names {
		c := compareLoadChart(&d, [2]*timeline.Run{runs[0].ForTarget(name), runs[1].ForTarget(name)}, labels, kinds)
		c.ID, c.Title = name+"-"+c.ID, name+": "+c.Title
		d.Charts = append(d.Charts, c)
	}
	return d
}

// compareLoadChart overlays the runs' load series, each run's of its own
// kind (present.Kind.Load); the chart is named after the first run's.
func compareLoadChart(d *chartData, runs [2]*timeline.Run, labels [2]string, kinds present.Kinds) chartSpec {
	c := chartSpec{ID: "load", Title: "Database load"}
	var first *present.Load
	for s, run := range runs {
		p, ok := kinds.Of(run.Manifest.Target)
		if !ok || p.Load == nil || p.Load.SameKindOnly && !kinds.Same(runs[0].Manifest.Target, runs[1].Manifest.Target) {
			continue
		}
		load := p.Load
		if first == nil {
			first = load
			if load.ID != "" {
				c.ID = load.ID
			}
			c.Title, c.Help, c.Axes = load.Title, load.Help, axes([]present.Axis{load.Axis})
		}
		src := chartSources{run: run, samples: map[string][]*timeline.Sample{}}
		for i := range run.Samples {
			sm := &run.Samples[i]
			src.samples[sm.Source] = append(src.samples[sm.Source], sm)
		}
		missing := math.NaN()
		if load.MissingIsZero {
			missing = 0
		}
		if len(src.samples[load.Source]) == 0 ||
			!load.MissingIsZero && len(src.keys(load.Source, func(k string) bool { return k == load.Key })) == 0 {
			continue
		}
		t := src.table(d, load.Source, []string{load.Key}, missing)
		c.Series = append(c.Series, seriesSpec{Label: labels[s], X: t.x, Col: t.cols[load.Key], Color: sideColors[s], Width: 1.5})
	}
	if len(c.Series) == 0 {
		switch {
		case first == nil:
			c.NoData = "neither run recorded its server's load"
		case first.NoData != "":
			c.NoData = first.NoData
		default:
			c.NoData = "neither run sampled " + first.Source
		}
	}
	return c
}

func uniq(names []string) []string {
	seen := map[string]bool{}
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
