package capacity

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
)

// HTMLFile is the page a capacity search writes into its directory.
const HTMLFile = "capacity.html"

// WriteHTML writes capacity.html: throughput against the offered load,
// latency against load with the SLO lines, the USL curve over the
// measured points, and the steps with what bound each. The page is
// self-contained (inline SVG drawn here, no script needed to read it;
// a small script only checks the drawing for the browser tests).
func WriteHTML(w io.Writer, r *Report) error {
	var summary strings.Builder
	if err := r.WriteSummary(&summary); err != nil {
		return err
	}
	v := htmlView{Title: "capacity: " + r.Scenario, Workload: r.Workload, Summary: summary.String(), Server: r.Server}
	v.Charts = []htmlChart{r.throughputChart(), r.latencyChart(), r.uslChart()}
	for _, s := range r.Result.Steps {
		row := htmlStep{N: s.N, Level: Level(r.Result.Vary, s.Level), Achieved: Rate(s.Measure.Achieved),
			P50: ms(float64(s.Measure.P50)), P99: ms(float64(s.Measure.P99)), P999: ms(float64(s.Measure.P999)),
			Failed: pct(s.Measure.FailedRatio()), Pass: s.Pass, Why: strings.Join(s.Why, "; "), Signals: Signals(s.Measure)}
		if s.Confirm > 0 {
			row.Level += fmt.Sprintf(" (confirm %d)", s.Confirm)
		}
		if s.Dir != "" {
			if rel, err := filepath.Rel(r.Dir, s.Dir); err == nil {
				row.Report = filepath.ToSlash(filepath.Join(rel, "report.html"))
			}
		}
		for _, b := range s.Binds {
			row.Binds = append(row.Binds, htmlBind{Rule: b.Rule, Severity: b.Severity, Headline: b.Headline, Remedy: firstSentence(b.Remedy)})
		}
		v.Steps = append(v.Steps, row)
	}
	return pageTemplate.Execute(w, v)
}

type htmlView struct {
	Title, Workload, Summary, Server string
	Charts                           []htmlChart
	Steps                            []htmlStep
}

type htmlChart struct {
	ID, Title, Note string
	SVG             template.HTML
}

type htmlStep struct {
	N                                       int
	Level, Achieved, P50, P99, P999, Failed string
	Pass                                    bool
	Why, Signals, Report                    string
	Binds                                   []htmlBind
}

type htmlBind struct{ Rule, Severity, Headline, Remedy string }

// series is one line or set of dots of a chart.
type series struct {
	Name   string
	Color  string
	Points []Point // N is x, X is y
	Line   bool    // joined; else dots
	Dashed bool
	// Fail marks dots of failing steps (drawn hollow), by index.
	Fail []bool
}

func (r *Report) levelAxis() string {
	if r.Result.Vary == VaryClients {
		return "clients"
	}
	return "offered rate (tx/s)"
}

// sortedSteps are the steps that measured something, by level.
func (r *Report) sortedSteps() []*Step {
	var steps []*Step
	for _, s := range r.Result.Steps {
		if s.Measure.Count > 0 || s.Measure.Failed > 0 {
			steps = append(steps, s)
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Level < steps[j].Level })
	return steps
}

func (r *Report) throughputChart() htmlChart {
	achieved := series{Name: "achieved", Color: "#1f77b4"}
	var maxLevel float64
	for _, s := range r.sortedSteps() {
		achieved.Points = append(achieved.Points, Point{s.Level, s.Measure.Achieved})
		achieved.Fail = append(achieved.Fail, !s.Pass)
		maxLevel = max(maxLevel, s.Level)
	}
	all := []series{achieved}
	if r.Result.Vary == VaryRate && maxLevel > 0 {
		all = append(all, series{Name: "offered", Color: "#999", Points: []Point{{0, 0}, {maxLevel, maxLevel}}, Line: true, Dashed: true})
	}
	return htmlChart{ID: "throughput", Title: "Throughput against load", Note: "filled: passing steps; hollow: failing",
		SVG: drawChart(r.levelAxis(), "achieved (tx/s)", all, nil)}
}

func (r *Report) latencyChart() htmlChart {
	p50 := series{Name: "p50", Color: "#2ca02c", Line: true}
	p99 := series{Name: "p99", Color: "#d62728", Line: true}
	p999 := series{Name: "p99.9", Color: "#9467bd", Line: true}
	for _, s := range r.sortedSteps() {
		if s.Measure.Count == 0 {
			continue
		}
		p50.Points = append(p50.Points, Point{s.Level, float64(s.Measure.P50) / 1000})
		p99.Points = append(p99.Points, Point{s.Level, float64(s.Measure.P99) / 1000})
		p999.Points = append(p999.Points, Point{s.Level, float64(s.Measure.P999) / 1000})
	}
	var limits []hline
	for _, o := range r.SLOs {
		if o.Metric != "failed" {
			limits = append(limits, hline{Y: o.Bound / 1000, Label: "SLO " + o.Text})
		}
	}
	return htmlChart{ID: "latency", Title: "Latency against load", Note: "dashed: the latency SLOs",
		SVG: drawChart(r.levelAxis(), "latency (ms)", []series{p50, p99, p999}, limits)}
}

func (r *Report) uslChart() htmlChart {
	measured := series{Name: "measured", Color: "#1f77b4"}
	for _, p := range r.Result.Points() {
		measured.Points = append(measured.Points, p)
	}
	c := htmlChart{ID: "usl", Title: "Universal Scalability Law"}
	all := []series{measured}
	if r.USL != nil {
		u := *r.USL
		curve := series{Name: "USL fit", Color: "#ff7f0e", Line: true}
		top := 2 * u.MaxN // no further: the fit is not extrapolated
		for i := 0; i <= 80; i++ {
			n := top * float64(i) / 80
			curve.Points = append(curve.Points, Point{n, u.Throughput(n)})
		}
		all = append(all, curve)
		c.Note = u.String()
		if n, x, ok := u.Peak(); ok {
			c.Note += fmt.Sprintf("; peak %s at %s", Rate(x), concurrency(r.Result.Vary, n))
		}
	} else {
		c.Note = "no fit: " + r.FitErr
	}
	x := "concurrency (clients)"
	if r.Result.Vary == VaryRate {
		x = "concurrency (in flight, by Little's law)"
	}
	c.SVG = drawChart(x, "throughput (tx/s)", all, nil)
	return c
}

// hline is a horizontal limit across a chart.
type hline struct {
	Y     float64
	Label string
}

// Chart geometry.
const (
	chartW, chartH             = 640, 300
	padL, padR, padT, padB     = 64, 16, 16, 44
	plotW, plotH               = chartW - padL - padR, chartH - padT - padB
	dotRadius                  = 4
	axisColor, gridColor, font = "#444", "#e5e5e5", "font: 11px sans-serif"
)

// drawChart draws series on linear axes from 0, with horizontal limits.
func drawChart(xLabel, yLabel string, all []series, limits []hline) template.HTML {
	var xMax, yMax float64
	points := 0
	for _, s := range all {
		for _, p := range s.Points {
			xMax, yMax = max(xMax, p.N), max(yMax, p.X)
			points++
		}
	}
	for _, l := range limits {
		yMax = max(yMax, l.Y)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" data-points="%d">`, chartW, chartH, chartW, chartH, points)
	if points == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" style="%s">no step measured anything yet</text></svg>`, chartW/2-90, chartH/2, font)
		return template.HTML(b.String())
	}
	xMax, yMax = niceMax(xMax), niceMax(yMax*1.05)
	px := func(x float64) float64 { return padL + x/xMax*plotW }
	py := func(y float64) float64 { return padT + plotH - y/yMax*plotH }
	for i := 0; i <= 5; i++ {
		xv, yv := xMax*float64(i)/5, yMax*float64(i)/5
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`, px(xv), padT, px(xv), padT+plotH, gridColor)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`, padL, py(yv), padL+plotW, py(yv), gridColor)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" style="%s">%s</text>`, px(xv), padT+plotH+14, font, tick(xv))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" style="%s">%s</text>`, padL-4, py(yv)+4, font, tick(yv))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`,
		padL, padT, padL, padT+plotH, axisColor, padL, padT+plotH, padL+plotW, padT+plotH, axisColor)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" style="%s">%s</text>`, padL+plotW/2, chartH-6, font, template.HTMLEscapeString(xLabel))
	fmt.Fprintf(&b, `<text transform="translate(12 %d) rotate(-90)" text-anchor="middle" style="%s">%s</text>`, padT+plotH/2, font, template.HTMLEscapeString(yLabel))
	for _, l := range limits {
		fmt.Fprintf(&b, `<line class="limit" x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d62728" stroke-dasharray="6 4"/>`, padL, py(l.Y), padL+plotW, py(l.Y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#d62728" style="%s">%s</text>`, padL+plotW-4, py(l.Y)-4, font, template.HTMLEscapeString(l.Label))
	}
	for i, s := range all {
		if s.Line && len(s.Points) > 0 {
			var pts []string
			for _, p := range s.Points {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.N), py(min(p.X, yMax))))
			}
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="4 4"`
			}
			fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, s.Color, dash, strings.Join(pts, " "))
		}
		if !s.Line || len(s.Points) < 12 {
			for j, p := range s.Points {
				fill := s.Color
				if j < len(s.Fail) && s.Fail[j] {
					fill = "white"
				}
				fmt.Fprintf(&b, `<circle class="series" cx="%.1f" cy="%.1f" r="%d" fill="%s" stroke="%s"/>`, px(p.N), py(p.X), dotRadius, fill, s.Color)
			}
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" style="%s">%s</text>`,
			padL+10+i*110, padT+2, s.Color, padL+24+i*110, padT+11, font, template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceMax rounds an axis' top up to 1, 2 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// tick formats an axis value compactly.
func tick(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case v >= 1e4:
		return fmt.Sprintf("%gk", math.Round(v/100)/10)
	case v >= 10 || v == 0:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

var pageTemplate = template.Must(template.New("capacity").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
pre.summary{background:#f6f6f6;padding:10px;white-space:pre-wrap}
.charts{display:flex;flex-wrap:wrap;gap:16px}.chart{border:1px solid #ddd;padding:8px}
.chart p{margin:4px 0;color:#555;font-size:12px}
table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #e5e5e5;padding:4px 8px;text-align:left;vertical-align:top}
td.num{text-align:right;white-space:nowrap}.pass{color:#2a7d2a}.fail{color:#c62828;font-weight:600}
.bind{margin:0 0 4px}.sev-critical{color:#c62828}.sev-warning{color:#b26a00}.why,.signals{color:#555;font-size:12px}
#selftest{display:none}
</style></head><body>
<h1>{{.Title}}</h1>
<p>Workload <b>{{.Workload}}</b>{{if .Server}}; {{.Server}}{{end}}.</p>
<pre class="summary">{{.Summary}}</pre>
<div class="charts">{{range .Charts}}<div class="chart" id="chart-{{.ID}}"><h2>{{.Title}}</h2>{{.SVG}}<p>{{.Note}}</p></div>{{end}}</div>
<h2>Steps</h2>
<table><thead><tr><th>step</th><th>level</th><th>achieved</th><th>p50</th><th>p99</th><th>p99.9</th><th>failed</th><th>result</th><th>what binds (finding and remedy)</th><th>run</th></tr></thead><tbody>
{{range .Steps}}<tr class="step"><td class="num">{{.N}}</td><td class="num">{{.Level}}</td><td class="num">{{.Achieved}}</td><td class="num">{{.P50}}</td><td class="num">{{.P99}}</td><td class="num">{{.P999}}</td><td class="num">{{.Failed}}</td>
<td>{{if .Pass}}<span class="pass">pass</span>{{else}}<span class="fail">FAIL</span><div class="why">{{.Why}}</div>{{end}}</td>
<td>{{range .Binds}}<p class="bind"><b class="sev-{{.Severity}}">{{.Rule}}</b>: {{.Headline}}{{if .Remedy}}<br><i>fix:</i> {{.Remedy}}{{end}}</p>{{else}}—{{end}}<div class="signals">{{.Signals}}</div></td>
<td>{{if .Report}}<a href="{{.Report}}">report</a>{{end}}</td></tr>
{{end}}</tbody></table>
<pre id="selftest"></pre>
<script>
(function(){
  var out = {charts: {}, errors: []};
  window.addEventListener('error', function(e){ out.errors.push(String(e.message)); });
  try {
    document.querySelectorAll('.chart').forEach(function(c){
      var svg = c.querySelector('svg');
      out.charts[c.id] = svg ? {points: Number(svg.getAttribute('data-points')), drawn: svg.querySelectorAll('.series').length,
        limits: svg.querySelectorAll('.limit').length, width: Math.round(svg.getBoundingClientRect().width)} : null;
    });
    out.steps = document.querySelectorAll('tr.step').length;
  } catch (e) { out.errors.push(String(e)); }
  document.getElementById('selftest').textContent = JSON.stringify(out);
})();
</script>
</body></html>
`))
