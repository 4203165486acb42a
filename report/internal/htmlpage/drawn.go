package htmlpage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/report/present"
)

// otherColor is the line of a family's lines not drawn on their own.
const otherColor = "#9e9e9e"

// defaultShades colour a group a kind gave no shades.
var defaultShades = []string{"#8c564b", "#a9786d", "#c49c93"}

// shadeOf colours a family's line by its group (the label's part before
// ':'), the group's shades in turn.
func shadeOf(label string, shades map[string][]string, used map[string]int) string {
	group, _, _ := strings.Cut(label, ":")
	s, ok := shades[group]
	if !ok {
		s = defaultShades
	}
	c := s[used[group]%len(s)]
	used[group]++
	return c
}

// dropCols empties columns nothing draws, so they cost two bytes each in
// the page instead of a run's worth of numbers.
func dropCols(d *chartData, t table, keys []string) {
	for _, k := range keys {
		d.Cols[t.cols[k]] = column{}
	}
}

// withServerCounters adds the server's counters (per tick) to the
// throughput chart's error axis as rates (present.DrawnThroughput).
func withServerCounters(d *chartData, src *chartSources, c chartSpec, counters []present.Series) chartSpec {
	for _, s := range counters {
		c = withServerCounter(d, src, c, s)
	}
	return c
}

func withServerCounter(d *chartData, src *chartSources, c chartSpec, s present.Series) chartSpec {
	if c.NoData != "" || len(src.keys(s.Source, func(k string) bool { return k == s.Key })) == 0 {
		return c
	}
	t := src.table(d, s.Source, []string{s.Key}, math.NaN())
	col, xs := d.Cols[t.cols[s.Key]], d.Xs[t.x]
	if allZero(col) {
		d.Cols[t.cols[s.Key]] = column{}
		return c
	}
	rate := make(column, len(col))
	for i, v := range col {
		dt := src.run.Manifest.Interval
		if i > 0 {
			dt = xs[i] - xs[i-1]
		}
		rate[i] = math.NaN()
		if dt > 0 {
			rate[i] = v / dt
		}
	}
	d.Cols[t.cols[s.Key]] = rate
	c.Series = append(c.Series, seriesSpec{Label: s.Label, X: t.x, Col: t.cols[s.Key], Axis: s.Axis, Color: s.Color, Width: s.Width})
	return c
}

// sessionsChart stacks sessions by what they wait on
// (present.DrawnSessions): the running ones first, then the largest
// waits, the rest as other; with the host's vCPUs when the server was
// ours.
func sessionsChart(d *chartData, src *chartSources, dc present.Chart) chartSpec {
	c := chartSpec{ID: dc.ID, Title: dc.Title, Help: dc.Help, Axes: axes(dc.Axes), Log: dc.Log}
	fam := dc.Series[0]
	running := ""
	runningLabel := ""
	if len(dc.Series) > 1 {
		running, runningLabel = dc.Series[1].Key, dc.Series[1].Label
	}
	keys := src.keys(fam.Source, func(k string) bool { return strings.HasPrefix(k, fam.Prefix) })
	if len(keys) == 0 {
		c.NoData = src.why(fam.Source, dc.What)
		return c
	}
	c.Notes = src.gaps(fam.Source)
	t := src.table(d, fam.Source, keys, 0)
	total := map[string]float64{}
	for _, k := range keys {
		for _, v := range d.Cols[t.cols[k]] {
			if !math.IsNaN(v) {
				total[k] += v
			}
		}
	}
	var waits []string
	for _, k := range keys {
		if k != running {
			waits = append(waits, k)
		}
	}
	slices.SortStableFunc(waits, func(a, b string) int { return cmp.Compare(total[b], total[a]) })
	top := fam.Top
	if top <= 0 {
		top = defaultFamilyTop
	}
	var rest []string
	if len(waits) > top {
		waits, rest = waits[:top], waits[top:]
	}
	used := map[string]int{}
	if col, ok := t.cols[running]; ok && running != "" {
		c.Series = append(c.Series, seriesSpec{Label: runningLabel, X: t.x, Col: col,
			Color: shadeOf(strings.TrimPrefix(running, fam.Prefix), dc.Shades, used), Stack: true})
	}
	for _, k := range waits {
		label := strings.TrimPrefix(k, fam.Prefix)
		c.Series = append(c.Series, seriesSpec{Label: label, X: t.x, Col: t.cols[k], Color: shadeOf(label, dc.Shades, used), Stack: true})
	}
	if len(rest) > 0 {
		other := make(column, len(d.Xs[t.x]))
		for _, k := range rest {
			for i, v := range d.Cols[t.cols[k]] {
				other[i] += v // NaN stays NaN: a failed read is a gap
			}
		}
		c.Series = append(c.Series, seriesSpec{
			Label: fmt.Sprintf("other (%d waits)", len(rest)), X: t.x, Col: d.addCol(other), Color: otherColor, Stack: true,
		})
	}
	// The waits not drawn on their own are summed into "other"; their own
	// columns are not needed by the page.
	dropCols(d, t, rest)
	if m := src.run.Manifest; m.Target.Embedded && m.Host.CPUs > 0 {
		vcpus := make(column, len(d.Xs[t.x]))
		for i := range vcpus {
			vcpus[i] = float64(m.Host.CPUs)
		}
		c.Series = append(c.Series, seriesSpec{Label: "host vCPUs", X: t.x, Col: d.addCol(vcpus), Color: "#444444", Style: "dash", Width: 1, Ref: true})
	}
	return c
}

// connectionsChart is the server's connections against its limit (the
// declared series, of one source) with the time the workloads waited
// for a pooled connection (present.DrawnConnections).
func connectionsChart(d *chartData, src *chartSources, wl []workloadData, dc present.Chart) chartSpec {
	c := chartSpec{ID: dc.ID, Title: dc.Title, Help: dc.Help, Axes: axes(dc.Axes), Log: dc.Log}
	source, name := dc.Series[0].Source, dc.Series[0].Name
	keys := src.keys(source, func(k string) bool {
		return slices.ContainsFunc(dc.Series, func(s present.Series) bool { return s.Key == k })
	})
	if len(keys) > 0 {
		t := src.table(d, source, keys, math.NaN())
		for _, s := range dc.Series {
			if col, ok := t.cols[s.Key]; ok {
				c.Series = append(c.Series, seriesSpec{Label: s.Label, X: t.x, Col: col, Color: s.Color, Style: s.Style, Width: s.Width, Ref: s.Ref})
			}
		}
		c.Notes = src.gaps(source)
	} else {
		c.Notes = append(c.Notes, name+": no data: "+src.why(source, dc.What))
	}
	anyPool := false
	for i, w := range wl {
		if w.anyPool {
			anyPool = true
			c.Series = append(c.Series, seriesSpec{Label: w.name + " pool wait p99", X: w.x, Col: w.pool99, Axis: 1, Color: colorAt(i), Width: 1, Alpha: 0.8})
		}
	}
	if !anyPool && len(wl) > 0 {
		c.Notes = append(c.Notes, "pool wait: no workload shares a pool (each client has its own connection)")
	}
	for i, w := range wl {
		if w.anyUnconnected {
			c.Series = append(c.Series, seriesSpec{Label: w.name + " clients without a connection", X: w.x, Col: w.unconnected, Color: colorAt(i), Style: "dot", Width: 1.5})
		}
	}
	if len(c.Series) == 0 {
		c.NoData = src.why(source, dc.What) + "; and no workload shares a pool"
		if len(wl) == 0 {
			c.NoData = src.why(source, dc.What)
		}
		c.Notes = nil
	}
	return c
}

// levelAndFamilyChart is one level on the left axis and a family's
// largest lines by peak with their total on the right
// (present.DrawnLevelAndFamily).
func levelAndFamilyChart(d *chartData, src *chartSources, dc present.Chart) chartSpec {
	c := chartSpec{ID: dc.ID, Title: dc.Title, Help: dc.Help, Axes: axes(dc.Axes), Log: dc.Log}
	level, fam := dc.Series[0], dc.Series[1]
	if keys := src.keys(level.Source, func(k string) bool { return k == level.Key }); len(keys) > 0 {
		t := src.table(d, level.Source, keys, math.NaN())
		c.Series = append(c.Series, seriesSpec{Label: level.Label, X: t.x, Col: t.cols[level.Key], Axis: level.Axis, Color: level.Color, Style: level.Style, Width: level.Width})
		c.Notes = append(c.Notes, src.gaps(level.Source)...)
	} else {
		c.Notes = append(c.Notes, level.Name+": no data: "+src.why(level.Source, level.What))
	}
	keys := src.keys(fam.Source, func(k string) bool { return strings.HasPrefix(k, fam.Prefix) && strings.HasSuffix(k, fam.Suffix) })
	if len(keys) > 0 {
		t := src.table(d, fam.Source, keys, math.NaN())
		peak := map[string]float64{}
		for _, k := range keys {
			for _, v := range d.Cols[t.cols[k]] {
				if !math.IsNaN(v) {
					peak[k] = math.Max(peak[k], v)
				}
			}
		}
		top := slices.Clone(keys)
		slices.SortStableFunc(top, func(a, b string) int { return cmp.Compare(peak[b], peak[a]) })
		n := fam.Top
		if n <= 0 {
			n = defaultFamilyTop
		}
		var rest []string
		if len(top) > n {
			top, rest = top[:n], top[n:]
		}
		for i, k := range top {
			label := strings.TrimSuffix(strings.TrimPrefix(k, fam.Prefix), fam.Suffix)
			c.Series = append(c.Series, seriesSpec{Label: label, X: t.x, Col: t.cols[k], Axis: fam.Axis, Color: colorAt(i), Style: fam.Style, Width: fam.Width})
		}
		if len(keys) > 1 {
			cols := make([]int, len(keys))
			for i, k := range keys {
				cols[i] = t.cols[k]
			}
			all := sumCols(d, cols)
			c.Series = append(c.Series, seriesSpec{Label: fmt.Sprintf("all %d %s", len(keys), fam.Label), X: t.x, Col: d.addCol(all), Axis: fam.Axis, Color: "#555555", Style: "dash", Width: 1.5})
		}
		dropCols(d, t, rest)
		c.Notes = append(c.Notes, src.gaps(fam.Source)...)
	} else {
		c.Notes = append(c.Notes, fam.Name+": no data: "+src.why(fam.Source, fam.What))
	}
	if len(c.Series) == 0 {
		c.NoData = joinReasons(src.why(level.Source, level.What), src.why(fam.Source, fam.What))
		c.Notes = nil
	}
	return c
}
