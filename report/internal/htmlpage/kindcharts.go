package htmlpage

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/report/present"
)

// neutralCharts are the database section of a run whose kind presents
// no charts of its own: the workloads' throughput and latency.
var neutralCharts = []present.Chart{{Drawn: present.DrawnThroughput}, {Drawn: present.DrawnLatency}}

// axes turns a kind's declared axes into the page's.
func axes(in []present.Axis) []axisSpec {
	out := make([]axisSpec, len(in))
	for i, a := range in {
		out[i] = axisSpec{Label: a.Label, Unit: a.Unit, Text: a.Text, Min: a.Min, Max: a.Max, Headroom: a.Headroom, Fixed: a.Fixed}
	}
	return out
}

const defaultFamilyTop = 6

// declaredChart draws a kind's declared chart from the run's samples.
func declaredChart(d *chartData, src *chartSources, dc present.Chart) chartSpec {
	c := chartSpec{ID: dc.ID, Title: dc.Title, Help: dc.Help, Axes: axes(dc.Axes), Log: dc.Log, Sparse: dc.Sparse}
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
		if !ds.ByName { // keys are sorted by name
			slices.SortStableFunc(keys, func(a, b string) int { return cmp.Compare(total[b], total[a]) })
		}
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
			c.Series = append(c.Series, seriesSpec{Label: "other", X: t.x, Col: d.addCol(other), Axis: ds.Axis, Color: otherColor,
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
