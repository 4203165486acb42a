package htmlpage

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// This file fits the charts to a reader at 3 am: every axis says its unit,
// charts with nothing to show leave the page (one line says what was not
// recorded and why), and latency whose tail dwarfs its median starts on a
// log scale.

// logRatio is the p99/p50 past which the latency chart starts on a log
// axis: on a linear one, a p50 twenty times below the p99 is a line on
// the floor.
const logRatio = 20

// omittedChart is a chart left off the page, and why.
type omittedChart struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Why   string `json:"why"`
}

// unitTexts are the units a reader reads, for the axis units whose name
// says it; a count's unit is the axis's own (Text).
var unitTexts = map[string]string{
	"rate":    "/s",
	"ms":      "ms",
	"s":       "s",
	"pct":     "%",
	"pct100":  "%",
	"bytes":   "bytes",
	"bytesps": "bytes/s",
	"cores":   "cores",
	"aas":     "sessions",
}

// unitText is the axis's unit in words: its Text, else its Unit's.
func (a axisSpec) unitText() string {
	if a.Text != "" {
		return a.Text
	}
	return unitTexts[a.Unit]
}

// fitCharts gives every axis its unit text, drops the series that have no
// value at all, leaves out (with the reason) the charts that have nothing
// to draw, and fixes the ranges of shares. Throughput and latency stay
// whatever they hold: an empty one is the news.
func fitCharts(d *chartData) (kept []chartSpec, omitted []omittedChart) {
	for _, c := range d.Charts {
		for i := range c.Axes {
			fitAxis(&c.Axes[i])
		}
		c.Series = slices.DeleteFunc(c.Series, func(s seriesSpec) bool { return allGaps(d.Cols[s.Col]) })
		// A right axis nothing is drawn on (no pool: no pool wait) is
		// a scale of nothing; leave it out.
		if len(c.Axes) == 2 && !slices.ContainsFunc(c.Series, func(s seriesSpec) bool { return s.Axis == 1 }) {
			c.Axes = c.Axes[:1]
		}
		hideDistantLimits(d, &c)
		base := c.ID
		if c.Base != "" {
			base = c.Base
		}
		essential := base == "throughput" || base == "latency"
		if why := emptyReason(d, c); why != "" && !essential {
			omitted = append(omitted, omittedChart{ID: c.ID, Title: c.Title, Why: why})
			continue
		}
		kept = append(kept, c)
	}
	return kept, omitted
}

// fitAxis sets the axis's unit text and pins shares to their whole range:
// a hit rate runs 0–100 %, never past.
func fitAxis(a *axisSpec) {
	a.Text = a.unitText()
	switch a.Unit {
	case "pct":
		a.Min, a.Max, a.Fixed = ptr(0), ptr(1), true
	case "pct100":
		a.Min, a.Max, a.Fixed = ptr(0), ptr(100), true
	}
}

// emptyReason says why a chart has nothing to show: its own reason, no
// series, or only zeros and reference lines (a limit is no data).
func emptyReason(d *chartData, c chartSpec) string {
	if c.NoData != "" {
		return c.NoData
	}
	if len(c.Series) == 0 {
		return "nothing was recorded"
	}
	var names []string
	values, ticks, nonzero := 0, 0, false
	for _, s := range c.Series {
		if !s.Ref {
			nonzero = nonzero || !allZero(d.Cols[s.Col])
			names = append(names, s.Label)
			ticks = max(ticks, len(d.Cols[s.Col]))
			for _, v := range d.Cols[s.Col] {
				if !math.IsNaN(v) {
					values++
				}
			}
		}
	}
	if len(names) == 0 {
		// Only reference lines: say what they held ("AOF on" at 0 is
		// the AOF off).
		var refs []string
		zero := true
		for _, s := range c.Series {
			refs = append(refs, s.Label)
			zero = zero && allZero(d.Cols[s.Col])
		}
		if zero {
			return "0 throughout (" + strings.Join(refs, ", ") + ")"
		}
		return "only limits were recorded (" + strings.Join(refs, ", ") + "), no values"
	}
	if values < minValues && ticks > 2*minValues {
		why := fmt.Sprintf("only %d value%s in %d ticks, too few to draw", values, plural(values), ticks)
		if c.Sparse != "" {
			why += " (" + c.Sparse + ")"
		}
		return why
	}
	if nonzero {
		return ""
	}
	return "0 throughout (" + strings.Join(names, ", ") + ")"
}

// minValues is how many values a chart needs to be worth a screen: a dot
// or two in a minute of gaps (a rare SLRU read) is a line of text.
const minValues = 3

// allGaps says a column has no value at all.
func allGaps(c column) bool {
	for _, v := range c {
		if !math.IsNaN(v) {
			return false
		}
	}
	return true
}

// tailRatio is the highest value of any tick in the column tail picks
// (p99, max) over the median p50 of the ticks, over the workloads: how
// far the tail reaches above the usual.
func tailRatio(d *chartData, wl []workloadData, tail func(workloadData) int) float64 {
	worst := 0.0
	for _, w := range wl {
		var p50s []float64
		for _, v := range d.Cols[w.p50] {
			if v > 0 {
				p50s = append(p50s, v)
			}
		}
		if len(p50s) == 0 {
			continue
		}
		slices.Sort(p50s)
		median := p50s[len(p50s)/2]
		for _, v := range d.Cols[tail(w)] {
			if v > 0 {
				worst = math.Max(worst, v/median)
			}
		}
	}
	return worst
}

// firstClause is the text up to its first ": ", "; " or ". " outside
// brackets and backquotes (the headline's "what"), or all of it when that
// would leave fewer than 12 characters.
func firstClause(s string) string { return clauseUntil(s, ":;.") }

// firstStep is a remedy's first sentence or clause: up to "; " or ". ",
// keeping a colon's explanation ("Grow the pool: …").
func firstStep(s string) string { return clauseUntil(s, ";.") }

func clauseUntil(s, stops string) string {
	depth, code := 0, false
	for i := 0; i+1 < len(s); i++ {
		switch c := s[i]; {
		case c == '`':
			code = !code
		case code:
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
		case depth == 0 && strings.IndexByte(stops, c) >= 0 && s[i+1] == ' ' && i >= 12:
			return s[:i]
		}
	}
	return strings.TrimSuffix(s, ".")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// farLimit is how far above the data a reference line may sit and still
// set the scale: max_connections at 200 over 10 backends would flatten
// them onto the floor.
const farLimit = 4

// hideDistantLimits hides (a legend click brings it back) each reference
// line far above the data on its axis, so the axis fits the data, and
// says so under the chart.
func hideDistantLimits(d *chartData, c *chartSpec) {
	for i := range c.Series {
		ref := &c.Series[i]
		if !ref.Ref || ref.Hidden {
			continue
		}
		dataMax, refMax := math.Inf(-1), colMax(d.Cols[ref.Col])
		for _, s := range c.Series {
			if !s.Ref && s.Axis == ref.Axis && !s.Hidden {
				dataMax = math.Max(dataMax, colMax(d.Cols[s.Col]))
			}
		}
		if dataMax > 0 && refMax > farLimit*dataMax {
			ref.Hidden = true
			c.Notes = append(c.Notes, fmt.Sprintf("%s (%s) is far above the data and not drawn, so the scale fits the data; click it in the legend to draw it",
				ref.Label, numText(refMax)))
		}
	}
}

// colMax is a column's largest value; -Inf when it has none.
func colMax(c column) float64 {
	m := math.Inf(-1)
	for _, v := range c {
		if !math.IsNaN(v) {
			m = math.Max(m, v)
		}
	}
	return m
}
