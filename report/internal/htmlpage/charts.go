package htmlpage

import (
	"fmt"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/service/svcpresent"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// The sources the neutral charts read, as the samplers write them.
const (
	sourceHost      = hostmetric.Host // cpu.user …: %; disk.*
	sourceFiredrill = hostmetric.Self // cpu: cores; rss_bytes
)

// chartSpec is one chart: what the template lays out and the script draws.
type chartSpec struct {
	ID     string       `json:"id"`
	Title  string       `json:"title"`
	Help   string       `json:"-"` // one line under the title
	Axes   []axisSpec   `json:"axes"`
	Series []seriesSpec `json:"series"`
	Log    bool         `json:"log,omitempty"`   // offers a log scale
	LogOn  bool         `json:"logOn,omitempty"` // starts on it (see logRatio)
	NoData string       `json:"nodata,omitempty"`
	Notes  []string     `json:"-"` // partial data: what is missing and why
	// Sparse says why a chart may hold only a few values (a hit rate
	// exists only in ticks with reads), for the line that leaves it out.
	Sparse string `json:"-"`
	// Base is the chart's own ID before a target's name prefixed it, in
	// a run of several targets ("" when ID is it).
	Base string `json:"-"`
	// Group names the section a chart of a run of several targets is
	// drawn in (a target's name, or the host's); Heading is set on the
	// first chart kept of each group.
	Group, Heading string `json:"-"`
}

// axisSpec is a y axis: 0 on the left, 1 on the right.
type axisSpec struct {
	Label string `json:"label"`
	Unit  string `json:"unit"` // rate, ms, s, aas, pct (0..1), pct100, count, bytes, bytesps, cores
	// Text is the unit as the reader reads it ("tx/s", "xids"); a
	// count's is required, the other units have their own (unitTexts).
	Text string   `json:"text"`
	Min  *float64 `json:"min,omitempty"`
	Max  *float64 `json:"max,omitempty"` // where the scale stops growing
	// Headroom > 1 stretches the scale so the series use the lower
	// 1/Headroom of the plot: errors stay below throughput.
	Headroom float64 `json:"headroom,omitempty"`
	// Fixed draws exactly Min to Max, whatever the data: a share's range.
	Fixed bool `json:"fixed,omitempty"`
}

// seriesSpec is one line or stacked area, its values Cols[Col] on Xs[X].
type seriesSpec struct {
	Label  string  `json:"label"`
	X      int     `json:"x"`
	Col    int     `json:"col"`
	Axis   int     `json:"axis,omitempty"`
	Color  string  `json:"color"`
	Style  string  `json:"style,omitempty"` // "", "dash", "dot": only for smooth lines, dashes are slow on jagged ones
	Alpha  float64 `json:"alpha,omitempty"` // the stroke's opacity; 0 is opaque
	Width  float64 `json:"width,omitempty"`
	Stack  bool    `json:"stack,omitempty"` // stacked on the previous stacked series
	Hidden bool    `json:"hidden,omitempty"`
	// Ref is a reference line (a limit such as max_connections), not
	// data: a chart of only limits and zeros has nothing to show.
	Ref bool `json:"ref,omitempty"`
}

// column is a series' values; NaN is a gap (null in JSON).
type column []float64

// MarshalJSON writes six significant digits (integers exactly), which is
// more than a chart can show and keeps a long run's report small.
func (c column) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(c)*6)
	b = append(b, '[')
	for i, v := range c {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			b = append(b, "null"...)
		case v == math.Trunc(v) && math.Abs(v) < 1e15:
			b = strconv.AppendInt(b, int64(v), 10)
		default:
			b = strconv.AppendFloat(b, v, 'g', 6, 64)
		}
	}
	return append(b, ']'), nil
}

// timeColumn is a time axis in seconds, written to the millisecond.
type timeColumn []float64

// MarshalJSON writes each time to the millisecond.
func (c timeColumn) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(c)*8)
	b = append(b, '[')
	for i, v := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, math.Round(v*1000)/1000, 'f', -1, 64)
	}
	return append(b, ']'), nil
}

// chartData is every chart with the columns they draw.
type chartData struct {
	Xs     []timeColumn
	Cols   []column
	Charts []chartSpec
}

// addX stores a time axis once, however many series use it.
func (d *chartData) addX(x []float64) int {
	for i, have := range d.Xs {
		if slices.Equal(have, x) {
			return i
		}
	}
	d.Xs = append(d.Xs, x)
	return len(d.Xs) - 1
}

func (d *chartData) addCol(c column) int {
	d.Cols = append(d.Cols, c)
	return len(d.Cols) - 1
}

// palette colours workloads and tables: distinct, readable on white,
// and without red, which means errors on these charts.
var palette = []string{
	"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
	"#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#005f5f",
}

func colorAt(i int) string { return palette[i%len(palette)] }

func ptr(v float64) *float64 { return &v }

// workloadData is one workload's interval columns.
type workloadData struct {
	name                           string
	x                              int
	tps, failed, skipped           int
	p50, p95, p99, pool99          int
	anyFailed, anySkipped, anyPool bool
	// maxLat is each tick's slowest finished transaction; stalled is the
	// age of the oldest one still running where it is older than that
	// (a stall in progress, which no finished transaction shows yet).
	maxLat, stalled int
	anyStalled      bool
	// Connections refused (or the server unavailable) and lost per
	// second, and the clients waiting for a connection.
	refused, lost, unconnected          int
	anyRefused, anyLost, anyUnconnected bool
	// offered is the arrival rate the shape asked for (tx/s), under an
	// open model; served is tps.
	offered int
	anyRate bool
}

// chartSources groups the run's samples by source once.
type chartSources struct {
	run     *timeline.Run
	samples map[string][]*timeline.Sample
	ran     map[string]string // sampler → notes, from the manifest
}

// newChartSources groups run's samples by source.
func newChartSources(run *timeline.Run) chartSources {
	src := chartSources{run: run, samples: map[string][]*timeline.Sample{}, ran: map[string]string{}}
	for i := range run.Samples {
		s := &run.Samples[i]
		src.samples[s.Source] = append(src.samples[s.Source], s)
	}
	for _, s := range run.Manifest.Samplers {
		src.ran[s.Name] = s.Notes
	}
	return src
}

// buildCharts draws the run's charts: its kind's database section (kind's
// Charts, else the neutral ones), then the host's and firedrill's own. A
// run of several targets has a database section per target, each drawn
// from the target's view of the run by its own kind's charts, on the
// run's one time axis.
func buildCharts(run *timeline.Run, kinds present.Kinds) chartData {
	var d chartData
	names := run.Manifest.TargetNames()
	if len(names) == 0 {
		kind, _ := kinds.Of(run.Manifest.Target)
		src := newChartSources(run)
		d.Charts = databaseCharts(&d, &src, run, kind)
		d.Charts = append(d.Charts, hostCharts(&d, &src)...)
		d.Charts = append(d.Charts, serviceCharts(&d, &src, false)...)
		return d
	}
	for _, name := range names {
		view := run.ForTarget(name)
		kind, _ := kinds.Of(view.Manifest.Target)
		src := newChartSources(view)
		for _, c := range databaseCharts(&d, &src, view, kind) {
			c.Base, c.Group = c.ID, name
			c.ID, c.Title = name+"-"+c.ID, name+": "+c.Title
			d.Charts = append(d.Charts, c)
		}
	}
	src := newChartSources(run)
	for _, c := range hostCharts(&d, &src) {
		c.Group = "host"
		d.Charts = append(d.Charts, c)
	}
	d.Charts = append(d.Charts, serviceCharts(&d, &src, true)...)
	return d
}

// serviceCharts are the charts of the run's services (scenario
// services:), from the series of the source "service"; grouped, under
// a heading each, in a run of several targets.
func serviceCharts(d *chartData, src *chartSources, grouped bool) []chartSpec {
	var out []chartSpec
	for _, name := range svcpresent.Names(src.keys(svcmetric.Source, func(string) bool { return true })) {
		for _, c := range svcpresent.Charts(name) {
			spec := declaredChart(d, src, c)
			if grouped {
				spec.Group = serviceGroup + name
			}
			out = append(out, spec)
		}
	}
	return out
}

// serviceGroup starts the group of a service's charts.
const serviceGroup = "service:"

// databaseCharts draws a kind's database section of run.
func databaseCharts(d *chartData, src *chartSources, run *timeline.Run, kind present.Kind) []chartSpec {
	wl := workloadColumns(d, run)
	charts := kind.Charts
	if len(charts) == 0 {
		charts = neutralCharts
	}
	var out []chartSpec
	for _, c := range charts {
		out = append(out, drawChart(d, src, wl, run, c))
	}
	return out
}

// hostCharts are the host's and firedrill's own charts.
func hostCharts(d *chartData, src *chartSources) []chartSpec {
	return []chartSpec{hostCPUChart(d, src), hostDiskChart(d, src), firedrillChart(d, src)}
}

// drawChart draws one chart of a kind's database section: a declared
// one from its series, or one the page draws by code.
func drawChart(d *chartData, src *chartSources, wl []workloadData, run *timeline.Run, c present.Chart) chartSpec {
	switch c.Drawn {
	case "":
		return declaredChart(d, src, c)
	case present.DrawnThroughput:
		return withServerCounters(d, src, throughputChart(d, wl, run), c.Series)
	case present.DrawnLatency:
		return latencyChart(d, wl, run)
	case present.DrawnSessions:
		return sessionsChart(d, src, c)
	case present.DrawnConnections:
		return connectionsChart(d, src, wl, c)
	case present.DrawnLevelAndFamily:
		return levelAndFamilyChart(d, src, c)
	}
	return chartSpec{ID: c.ID, Title: c.Title, NoData: "this version of the report cannot draw charts of shape " + c.Drawn}
}

// workloadColumns turns intervals into per-workload columns, each point
// at its interval's end (as rates from counters are).
func workloadColumns(d *chartData, run *timeline.Run) []workloadData {
	byName := map[string][]*timeline.Interval{}
	var order []string
	for _, w := range run.Manifest.Workloads {
		if _, ok := byName[w.Name]; !ok {
			byName[w.Name] = nil
			order = append(order, w.Name)
		}
	}
	for i := range run.Intervals {
		iv := &run.Intervals[i]
		if _, ok := byName[iv.Workload]; !ok {
			order = append(order, iv.Workload)
		}
		byName[iv.Workload] = append(byName[iv.Workload], iv)
	}
	var out []workloadData
	for _, name := range order {
		ivs := byName[name]
		if len(ivs) == 0 {
			continue
		}
		n := len(ivs)
		x := make([]float64, n)
		tps, failed, skipped := make(column, n), make(column, n), make(column, n)
		p50, p95, p99, pool := make(column, n), make(column, n), make(column, n), make(column, n)
		maxLat, stalled := make(column, n), make(column, n)
		refused, lost, unconnected := make(column, n), make(column, n), make(column, n)
		offered := make(column, n)
		w := workloadData{name: name}
		for i, iv := range ivs {
			x[i] = iv.End
			dt := iv.End - iv.Start
			offered[i] = iv.Rate
			w.anyRate = w.anyRate || iv.Rate > 0
			if dt <= 0 {
				tps[i], failed[i], skipped[i] = math.NaN(), math.NaN(), math.NaN()
			} else {
				tps[i] = float64(iv.Count) / dt
				failed[i] = float64(iv.Failed) / dt
				skipped[i] = float64(iv.Skipped) / dt
			}
			w.anyFailed = w.anyFailed || iv.Failed > 0
			w.anySkipped = w.anySkipped || iv.Skipped > 0
			nRefused, nLost := sumCounts(iv.Refused)+sumCounts(iv.Unavailable), sumCounts(iv.Lost)
			refused[i], lost[i], unconnected[i] = math.NaN(), math.NaN(), float64(iv.Unconnected)
			if dt > 0 {
				refused[i], lost[i] = float64(nRefused)/dt, float64(nLost)/dt
			}
			w.anyRefused = w.anyRefused || nRefused > 0
			w.anyLost = w.anyLost || nLost > 0
			w.anyUnconnected = w.anyUnconnected || iv.Unconnected > 0
			if iv.Count == 0 { // no successful transaction: no latency, a gap
				p50[i], p95[i], p99[i], maxLat[i] = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			} else {
				p50[i] = msFromUS(iv.LatencyPct.P50)
				p95[i] = msFromUS(iv.LatencyPct.P95)
				p99[i] = msFromUS(iv.LatencyPct.P99)
				maxLat[i] = msFromUS(iv.LatencyPct.Max)
			}
			stalled[i] = math.NaN()
			if iv.OldestUS > 0 && (iv.Count == 0 || iv.OldestUS > iv.LatencyPct.Max) {
				stalled[i] = msFromUS(iv.OldestUS)
				w.anyStalled = true
			}
			if iv.PoolWait != nil || iv.PoolWaitPct != (timeline.Percentiles{}) {
				w.anyPool = true
				pool[i] = msFromUS(iv.PoolWaitPct.P99)
			} else {
				pool[i] = math.NaN()
			}
		}
		w.x = d.addX(x)
		w.tps, w.failed, w.skipped = d.addCol(tps), d.addCol(failed), d.addCol(skipped)
		w.p50, w.p95, w.p99, w.pool99 = d.addCol(p50), d.addCol(p95), d.addCol(p99), d.addCol(pool)
		w.maxLat = d.addCol(maxLat)
		if w.anyStalled {
			w.stalled = d.addCol(stalled)
		}
		if w.anyRate {
			w.offered = d.addCol(offered)
		}
		if w.anyRefused || w.anyLost || w.anyUnconnected {
			w.refused, w.lost, w.unconnected = d.addCol(refused), d.addCol(lost), d.addCol(unconnected)
		}
		out = append(out, w)
	}
	return out
}

func noIntervals(run *timeline.Run) string {
	why := "no workload intervals were recorded"
	if run.Manifest.Status != timeline.StatusCompleted && run.Manifest.Error != "" {
		why += " (the run " + run.Manifest.Status + ": " + run.Manifest.Error + ")"
	}
	return why
}

func throughputChart(d *chartData, wl []workloadData, run *timeline.Run) chartSpec {
	c := chartSpec{
		ID: "throughput", Title: "Throughput and errors",
		Help: "Successful transactions per second (bold, left axis); failed and skipped per second (thin, pale, right axis, kept to the lower half).",
		Axes: []axisSpec{{Label: "tx/s", Unit: "rate", Text: "tx/s", Min: ptr(0)}, {Label: "errors/s", Unit: "rate", Text: "errors/s", Min: ptr(0), Headroom: 2}},
	}
	if len(wl) == 0 {
		c.NoData = noIntervals(run)
		return c
	}
	for i, w := range wl {
		c.Series = append(c.Series, seriesSpec{Label: w.name, X: w.x, Col: w.tps, Color: colorAt(i), Width: 1.5})
		// Under an arrival rate, what was asked beside what was served:
		// the gap between them is the backlog.
		if w.anyRate {
			c.Series = append(c.Series, seriesSpec{Label: w.name + " offered", X: w.x, Col: w.offered, Color: colorAt(i), Style: "dash", Width: 1.5, Alpha: 0.75})
			c.Help = "Successful transactions per second (bold, left axis) against the arrival rate offered (dashed: a served line below it is a backlog); failed and skipped per second (thin, pale, right axis, kept to the lower half)."
		}
	}
	// Past a few workloads their error lines are a thicket over the
	// throughput: draw the total (when they tick together) and keep each
	// workload's line a legend click away.
	shared := len(wl) > 3
	var failedCols, skippedCols []int
	for _, w := range wl {
		shared = shared && w.x == wl[0].x
		if w.anyFailed {
			failedCols = append(failedCols, w.failed)
		}
		if w.anySkipped {
			skippedCols = append(skippedCols, w.skipped)
		}
	}
	if shared && len(failedCols) > 0 {
		c.Series = append(c.Series, seriesSpec{Label: "all failed/s", X: wl[0].x, Col: d.addCol(sumCols(d, failedCols)), Axis: 1, Color: "#d62728", Width: 1, Alpha: 0.85})
	}
	if shared && len(skippedCols) > 0 {
		c.Series = append(c.Series, seriesSpec{Label: "all skipped/s", X: wl[0].x, Col: d.addCol(sumCols(d, skippedCols)), Axis: 1, Color: "#8c564b", Width: 1, Alpha: 0.7})
	}
	for i, w := range wl {
		if w.anyFailed {
			c.Series = append(c.Series, seriesSpec{Label: w.name + " failed/s", X: w.x, Col: w.failed, Axis: 1, Color: colorAt(i), Width: 1, Alpha: 0.7, Hidden: shared})
		}
		if w.anySkipped {
			c.Series = append(c.Series, seriesSpec{Label: w.name + " skipped/s", X: w.x, Col: w.skipped, Axis: 1, Color: colorAt(i), Width: 1, Alpha: 0.4, Hidden: shared})
		}
		// Of the failures, the connections refused and lost.
		if w.anyRefused {
			c.Series = append(c.Series, seriesSpec{Label: w.name + " connections refused/s", X: w.x, Col: w.refused, Axis: 1, Color: "#d62728", Width: 1, Alpha: 0.6, Hidden: shared})
		}
		if w.anyLost {
			c.Series = append(c.Series, seriesSpec{Label: w.name + " connections lost/s", X: w.x, Col: w.lost, Axis: 1, Color: "#8c1c13", Width: 1, Alpha: 0.6, Hidden: shared})
		}
	}
	return c
}

// sumCounts adds up counts by code.
func sumCounts(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// sumCols adds columns of one time axis; a point is a gap only where
// every column has one.
func sumCols(d *chartData, cols []int) column {
	out := make(column, len(d.Cols[cols[0]]))
	for i := range out {
		sum, n := 0.0, 0
		for _, c := range cols {
			if v := d.Cols[c][i]; !math.IsNaN(v) {
				sum += v
				n++
			}
		}
		if n == 0 {
			sum = math.NaN()
		}
		out[i] = sum
	}
	return out
}

func latencyChart(d *chartData, wl []workloadData, run *timeline.Run) chartSpec {
	c := chartSpec{
		ID: "latency", Title: "Latency",
		Help: "Successful transactions' latency per tick: max dotted, p99 bold, p95 paler, p50 palest; \"running\" (dashed) is how long the oldest transaction still running had waited, where that is longer than any that finished: a stall while it lasts. Click a legend entry to show or hide it.",
		Axes: []axisSpec{{Label: "latency", Unit: "ms", Min: ptr(0)}},
		Log:  true,
	}
	if len(wl) == 0 {
		c.NoData = noIntervals(run)
		return c
	}
	if r := tailRatio(d, wl, func(w workloadData) int { return w.p99 }); r > logRatio {
		c.LogOn = true
		c.Help += fmt.Sprintf(" Log scale: the highest p99 is %.0f× the median p50.", r)
	} else if r := tailRatio(d, wl, func(w workloadData) int { return w.maxLat }); r > logRatio {
		c.LogOn = true
		c.Help += fmt.Sprintf(" Log scale: the slowest transaction is %.0f× the median p50.", r)
	}
	// Many workloads make 3×N lines; show their p99 and let the legend
	// bring back the rest.
	few := len(wl) <= 3
	for i, w := range wl {
		c.Series = append(c.Series,
			seriesSpec{Label: w.name + " p99", X: w.x, Col: w.p99, Color: colorAt(i), Width: 1.5},
			seriesSpec{Label: w.name + " p95", X: w.x, Col: w.p95, Color: colorAt(i), Width: 1, Alpha: 0.6, Hidden: !few},
			seriesSpec{Label: w.name + " p50", X: w.x, Col: w.p50, Color: colorAt(i), Width: 1, Alpha: 0.35, Hidden: !few},
			seriesSpec{Label: w.name + " max", X: w.x, Col: w.maxLat, Color: colorAt(i), Style: "dot", Width: 1, Alpha: 0.8})
		if w.anyStalled {
			c.Series = append(c.Series, seriesSpec{Label: w.name + " running", X: w.x, Col: w.stalled, Color: colorAt(i), Style: "dash", Width: 2})
		}
	}
	return c
}

// table is some keys of one source as columns on the source's time axis.
type table struct {
	x    int
	cols map[string]int
}

// table builds columns for keys from the source's samples. A sample that
// failed is a gap in every column; a key a good sample lacks is
// missingValue (0 where absence means none, as for a wait event nobody
// waits on; NaN otherwise).
func (s *chartSources) table(d *chartData, source string, keys []string, missingValue float64) table {
	samples := s.samples[source]
	x := make([]float64, len(samples))
	vals := make([]column, len(keys))
	for k := range vals {
		vals[k] = make(column, len(samples))
	}
	for i, sm := range samples {
		x[i] = sm.T
		failed := sm.Error != "" && len(sm.Values) == 0
		for k, key := range keys {
			v, ok := sm.Values[key]
			switch {
			case failed:
				v = math.NaN()
			case !ok:
				v = missingValue
			}
			vals[k][i] = v
		}
	}
	t := table{x: d.addX(x), cols: map[string]int{}}
	for k, key := range keys {
		t.cols[key] = d.addCol(vals[k])
	}
	return t
}

// keys lists the source's value names that match, sorted.
func (s *chartSources) keys(source string, match func(string) bool) []string {
	seen := map[string]bool{}
	for _, sm := range s.samples[source] {
		for k := range sm.Values {
			if !seen[k] && match(k) {
				seen[k] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// why says why source has nothing to draw, in the words an engineer can
// act on: the sampler's own note, that it did not run, or its last error.
func (s *chartSources) why(source, what string) string {
	samples := s.samples[source]
	if notes, ok := s.ran[source]; ok && notes != "" && len(samples) == 0 {
		return source + ": " + notes
	}
	if len(samples) == 0 {
		if _, ok := s.ran[source]; ok {
			return "the " + source + " sampler ran but recorded nothing"
		}
		if len(s.ran) == 0 && len(s.run.Samples) == 0 {
			return "no samplers ran in this run, so the database and host were not watched"
		}
		return "the " + source + " sampler did not run"
	}
	failed, last := 0, ""
	for _, sm := range samples {
		if sm.Error != "" {
			failed++
			last = sm.Error
		}
	}
	if failed == len(samples) {
		return fmt.Sprintf("every %s read failed (%d; last: %s)", source, failed, last)
	}
	why := source + " reported no " + what
	if notes := s.ran[source]; notes != "" {
		why += " (" + notes + ")"
	}
	return why
}

// joinReasons joins two reasons for no data, once if they are the same.
func joinReasons(a, b string) string {
	if a == b {
		return a
	}
	return a + "; " + b
}

// gaps notes reads that failed, which the chart shows as gaps. Reads a
// stalled server left unanswered are not: every chart marks the stall
// once, as a band (stallBands), rather than each chart repeating it.
func (s *chartSources) gaps(source string) []string {
	samples := s.samples[source]
	failed, last := 0, ""
	for _, sm := range samples {
		if sm.Error != "" && sm.Stall == 0 {
			failed++
			last = sm.Error
		}
	}
	if failed == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%s: %d of %d reads failed and are gaps (last: %s)", source, failed, len(samples), last)}
}

func hostCPUChart(d *chartData, src *chartSources) chartSpec {
	c := chartSpec{
		ID: "hostcpu", Title: "Host CPU",
		Help: "The machine firedrill ran on, stacked: user, system, and time idle waiting for I/O.",
		Axes: []axisSpec{{Label: "CPU %", Unit: "pct100", Min: ptr(0), Max: ptr(100)}},
	}
	named := []struct{ key, label, color string }{
		{"cpu.user", "user", "#2ca02c"}, {"cpu.system", "system", "#ff7f0e"}, {"cpu.iowait", "iowait", "#1f77b4"},
	}
	keys := src.keys(sourceHost, func(k string) bool { return strings.HasPrefix(k, "cpu.") })
	if len(keys) == 0 {
		c.NoData = src.why(sourceHost, "CPU use")
		return c
	}
	t := src.table(d, sourceHost, keys, math.NaN())
	for _, n := range named {
		if col, ok := t.cols[n.key]; ok {
			c.Series = append(c.Series, seriesSpec{Label: n.label, X: t.x, Col: col, Color: n.color, Stack: true})
		}
	}
	if len(c.Series) == 0 {
		c.NoData = src.why(sourceHost, "CPU use")
	}
	c.Notes = src.gaps(sourceHost)
	return c
}

func hostDiskChart(d *chartData, src *chartSources) chartSpec {
	c := chartSpec{
		ID: "hostdisk", Title: "Host disk",
		Help: "Bytes read and written per second (left); average I/O wait per request (right, thin grey).",
		Axes: []axisSpec{{Label: "bytes/s", Unit: "bytesps", Min: ptr(0)}, {Label: "disk await", Unit: "ms", Min: ptr(0)}},
	}
	named := []struct{ key, label, color, side string }{
		{"disk.write_bytes_per_s", "write", "#ff7f0e", ""},
		{"disk.read_bytes_per_s", "read", "#1f77b4", ""},
		{"disk.await_ms", "await", "#555555", "right"},
	}
	keys := src.keys(sourceHost, func(k string) bool { return strings.HasPrefix(k, "disk.") })
	if len(keys) == 0 {
		c.NoData = src.why(sourceHost, "disk use")
		return c
	}
	t := src.table(d, sourceHost, keys, math.NaN())
	for _, n := range named {
		if col, ok := t.cols[n.key]; ok {
			s := seriesSpec{Label: n.label, X: t.x, Col: col, Color: n.color, Width: 1.5}
			if n.side == "right" {
				s.Axis, s.Width = 1, 1
			}
			c.Series = append(c.Series, s)
		}
	}
	if len(c.Series) == 0 {
		c.NoData = src.why(sourceHost, "disk use")
	}
	c.Notes = src.gaps(sourceHost)
	return c
}

func firedrillChart(d *chartData, src *chartSources) chartSpec {
	c := chartSpec{
		ID: "firedrill", Title: "firedrill itself",
		Help: "The load generator's own CPU (left, cores) and memory (right, dashed). Near the host's cores, the client, not the database, limits the run.",
		Axes: []axisSpec{{Label: "cores", Unit: "cores", Min: ptr(0)}, {Label: "RSS", Unit: "bytes", Min: ptr(0)}},
	}
	keys := src.keys(sourceFiredrill, func(k string) bool { return k == "cpu" || k == "rss_bytes" })
	if len(keys) == 0 {
		c.NoData = src.why(sourceFiredrill, "CPU or memory use")
		return c
	}
	t := src.table(d, sourceFiredrill, keys, math.NaN())
	if col, ok := t.cols["cpu"]; ok {
		c.Series = append(c.Series, seriesSpec{Label: "CPU", X: t.x, Col: col, Color: "#2ca02c", Width: 1.5})
		if cpus := src.run.Manifest.Host.CPUs; cpus > 0 {
			line := make(column, len(d.Xs[t.x]))
			for i := range line {
				line[i] = float64(cpus)
			}
			c.Series = append(c.Series, seriesSpec{Label: "host vCPUs", X: t.x, Col: d.addCol(line), Color: "#444444", Style: "dot", Width: 1, Ref: true})
		}
	}
	if col, ok := t.cols["rss_bytes"]; ok {
		c.Series = append(c.Series, seriesSpec{Label: "RSS", X: t.x, Col: col, Axis: 1, Color: "#9467bd", Style: "dash", Width: 1.5})
	}
	c.Notes = src.gaps(sourceFiredrill)
	return c
}
