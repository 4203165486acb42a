package htmlpage

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/timeline"
)

// kindCharts are the database charts of each kind of target but
// PostgreSQL's (whose charts are drawn by code: buildCharts), keyed by
// timeline.Target.Kind. A kind's charts live in a file of their own
// (charts_<kind>.go) and read its samplers' keys from its metric leaf; a
// kind without an entry gets only the neutral charts (workloads, host,
// firedrill itself).
var kindCharts = map[string][]dbChart{
	"redis":   redisCharts,
	"mariadb": mariadbCharts,
}

// compareLoad is, per kind, the one series the compare page overlays as
// the database's load (PostgreSQL's is its average active sessions).
type compareLoad struct {
	Title, Help string
	Axis        axisSpec
	Source, Key string
}

// compareLoads are the compare page's load series of the kinds in
// kindCharts.
var compareLoads = map[string]compareLoad{
	"redis":   redisLoad,
	"mariadb": mariadbLoad,
}

// postgresKind says whether a run's database charts are PostgreSQL's:
// its kind, or no kind at all (runs recorded before kinds existed).
func postgresKind(t timeline.Target) bool { return t.Kind == "" || t.Kind == "postgres" }

// dbChart declares one database chart: series read straight from the
// sampled values, which the samplers already record as levels, rates or
// counts per interval.
type dbChart struct {
	ID, Title, Help string
	Axes            []axisSpec
	Log             bool
	Series          []dbSeries
	// What names what the chart shows when none of its series has data
	// ("the AOF's fsync counters"), for the reason it gives.
	What string
}

// dbSeries is one line, or a family of lines, of a dbChart.
type dbSeries struct {
	Source string
	// Key is one value key; or, when empty, every key that starts with
	// Prefix and ends with Suffix is a line of its own, labelled with
	// what lies between (sorted by total, largest first).
	Key            string
	Prefix, Suffix string
	// Top keeps the family's largest lines on their own (default 6) and
	// sums the rest into one "other" line.
	Top   int
	Label string // Key's label (the family's lines use their own part)
	Axis  int
	Color string // Key's colour (the family's lines use the palette)
	Style string
	Width float64
	Alpha float64
	Stack bool
	// ZeroWhenAbsent: a good sample without the key means 0 (an event
	// that did not happen), not a gap.
	ZeroWhenAbsent bool
	// SkipIfZero leaves the line out when it is 0 throughout (a limit
	// that is not set, a counter that never moved).
	SkipIfZero bool
	Hidden     bool
	// Ref marks a limit, not data (see seriesSpec.Ref).
	Ref bool
	// Scale multiplies Key's values into the axis's unit (0.001: ms to
	// s); 0 is 1.
	Scale float64
}

const defaultFamilyTop = 6

// declaredCharts draws a kind's declared charts from the run's samples.
func declaredCharts(d *chartData, src *chartSources, charts []dbChart) []chartSpec {
	out := make([]chartSpec, 0, len(charts))
	for _, dc := range charts {
		out = append(out, declaredChart(d, src, dc))
	}
	return out
}

func declaredChart(d *chartData, src *chartSources, dc dbChart) chartSpec {
	c := chartSpec{ID: dc.ID, Title: dc.Title, Help: dc.Help, Axes: dc.Axes, Log: dc.Log}
	var sources []string
	colorIdx := 0
	for _, ds := range dc.Series {
		if !slices.Contains(sources, ds.Source) {
			sources = append(sources, ds.Source)
		}
		missing := math.NaN()
		if ds.ZeroWhenAbsent {
			missing = 0
		}
		if ds.Key != "" {
			if len(src.keys(ds.Source, func(k string) bool { return k == ds.Key })) == 0 {
				continue
			}
			t := src.table(d, ds.Source, []string{ds.Key}, missing)
			col := t.cols[ds.Key]
			if ds.Scale != 0 {
				for i := range d.Cols[col] {
					d.Cols[col][i] *= ds.Scale
				}
			}
			if ds.SkipIfZero && allZero(d.Cols[col]) {
				d.Cols[col] = column{}
				continue
			}
			color := ds.Color
			if color == "" {
				color = colorAt(colorIdx)
				colorIdx++
			}
			c.Series = append(c.Series, seriesSpec{Label: ds.Label, X: t.x, Col: col, Axis: ds.Axis, Color: color,
				Style: ds.Style, Width: ds.Width, Alpha: ds.Alpha, Stack: ds.Stack, Hidden: ds.Hidden, Ref: ds.Ref})
			continue
		}
		keys := src.keys(ds.Source, func(k string) bool {
			return len(k) > len(ds.Prefix)+len(ds.Suffix) && strings.HasPrefix(k, ds.Prefix) && strings.HasSuffix(k, ds.Suffix)
		})
		if len(keys) == 0 {
			continue
		}
		t := src.table(d, ds.Source, keys, missing)
		total := map[string]float64{}
		for _, k := range keys {
			for _, v := range d.Cols[t.cols[k]] {
				if !math.IsNaN(v) {
					total[k] += math.Abs(v)
				}
			}
		}
		if ds.SkipIfZero {
			var moved []string
			for _, k := range keys {
				if total[k] > 0 {
					moved = append(moved, k)
				} else {
					d.Cols[t.cols[k]] = column{}
				}
			}
			keys = moved
		}
		slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(total[b], total[a]) })
		top := ds.Top
		if top <= 0 {
			top = defaultFamilyTop
		}
		var rest []string
		if len(keys) > top {
			keys, rest = keys[:top], keys[top:]
		}
		for _, k := range keys {
			label := strings.TrimSuffix(strings.TrimPrefix(k, ds.Prefix), ds.Suffix)
			c.Series = append(c.Series, seriesSpec{Label: label, X: t.x, Col: t.cols[k], Axis: ds.Axis, Color: colorAt(colorIdx),
				Style: ds.Style, Width: ds.Width, Alpha: ds.Alpha, Stack: ds.Stack, Hidden: ds.Hidden})
			colorIdx++
		}
		if len(rest) > 0 {
			cols := make([]int, len(rest))
			for i, k := range rest {
				cols[i] = t.cols[k]
			}
			other := sumCols(d, cols)
			c.Series = append(c.Series, seriesSpec{Label: "other", X: t.x, Col: d.addCol(other), Axis: ds.Axis, Color: waitColors["other"][0],
				Style: ds.Style, Width: ds.Width, Alpha: ds.Alpha, Stack: ds.Stack, Hidden: ds.Hidden})
			dropCols(d, t, rest)
		}
	}
	for _, s := range sources {
		c.Notes = append(c.Notes, src.gaps(s)...)
	}
	if len(c.Series) == 0 {
		what := dc.What
		if what == "" {
			what = "values for this chart"
		}
		// The first series' source is the chart's own; the others add
		// to it, and their silence says nothing more.
		c.NoData, c.Notes = src.why(sources[0], what), nil
	}
	return c
}

func allZero(c column) bool {
	for _, v := range c {
		if !math.IsNaN(v) && v != 0 {
			return false
		}
	}
	return true
}
