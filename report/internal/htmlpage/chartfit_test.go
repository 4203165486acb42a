package htmlpage

import (
	"math"
	"strings"
	"testing"
)

func TestFitCharts(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	d := &chartData{Cols: []column{
		{1, 2, 3, 4, 5, 6, 7, 8},                    // 0: data
		{0, 0, 0, 0, 0, 0, 0, 0},                    // 1: zeros
		{200, 200, 200, 200, 200, 200, 200, 200},    // 2: a limit
		{nan, nan, nan, nan, nan, nan, nan, nan},    // 3: nothing
		{nan, 0.9, nan, nan, nan, nan, nan, nan},    // 4: one value in eight ticks
		{nan, 0.9, 0.8, 0.5, nan, 0.7, 0.6, 0.9},    // 5: a sparse but drawable share
		{0, 0, 0, 0, 0, 0, 0, 0},                    // 6: zeros again
		{0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2},    // 7: data on a right axis
		{nan, nan, nan, nan, nan, nan, nan, nan, 1}, // 8: unused
	}}
	two := []axisSpec{{Label: "connections", Unit: "count", Text: "connections"}, {Label: "pool wait p99", Unit: "ms"}}
	d.Charts = []chartSpec{
		// kept: data; its right axis has nothing drawn on it and goes.
		{ID: "data", Axes: two, Series: []seriesSpec{{Col: 0}, {Col: 2, Ref: true}, {Col: 3, Axis: 1}}},
		// left out: only zeros and a limit.
		{ID: "zeros", Axes: two, Series: []seriesSpec{{Label: "backends", Col: 1}, {Label: "max", Col: 2, Ref: true}}},
		// left out: its own reason.
		{ID: "nodata", NoData: "the sampler did not run"},
		// left out: one value, with the chart's reason for sparseness.
		{ID: "sparse", Sparse: "reads are rare", Axes: []axisSpec{{Label: "hit rate", Unit: "pct"}}, Series: []seriesSpec{{Col: 4}}},
		// kept: a share with gaps, pinned to 0–100 %.
		{ID: "share", Axes: []axisSpec{{Label: "hit rate", Unit: "pct", Max: ptr(1)}}, Series: []seriesSpec{{Col: 5}}},
		// kept though empty: an empty throughput chart is the news.
		{ID: "throughput", Axes: two, Series: []seriesSpec{{Col: 6}, {Col: 7, Axis: 1}}},
		// left out: nothing but a limit.
		{ID: "limits", Axes: two, Series: []seriesSpec{{Label: "max_connections", Col: 2, Ref: true}}},
		// left out: a switch that was off ("AOF on" at 0).
		{ID: "off", Axes: two, Series: []seriesSpec{{Label: "AOF on", Col: 6, Ref: true}}},
	}
	kept, omitted := fitCharts(d)
	var keptIDs []string
	for _, c := range kept {
		keptIDs = append(keptIDs, c.ID)
	}
	if got := strings.Join(keptIDs, ","); got != "data,share,throughput" {
		t.Errorf("kept %s, want data,share,throughput", got)
	}
	why := map[string]string{}
	for _, o := range omitted {
		why[o.ID] = o.Why
	}
	for id, want := range map[string]string{
		"zeros":  "0 throughout (backends)",
		"nodata": "the sampler did not run",
		"sparse": "only 1 value in 8 ticks, too few to draw (reads are rare)",
		"limits": "only limits were recorded (max_connections), no values",
		"off":    "0 throughout (AOF on)",
	} {
		if why[id] != want {
			t.Errorf("chart %s left out because %q, want %q", id, why[id], want)
		}
	}
	data := kept[0]
	if len(data.Axes) != 1 || len(data.Series) != 2 {
		t.Errorf("data chart: %d axes, %d series; want the empty series and its right axis gone", len(data.Axes), len(data.Series))
	}
	// The limit at 200 over data up to 8 would flatten it: hidden, said.
	if !data.Series[1].Hidden || len(data.Notes) != 1 || !strings.Contains(data.Notes[0], "(200) is far above the data") {
		t.Errorf("data chart: limit hidden %v, notes %q; want it hidden and said", data.Series[1].Hidden, data.Notes)
	}
	if a := kept[1].Axes[0]; !a.Fixed || *a.Min != 0 || *a.Max != 1 || a.Text != "%" {
		t.Errorf("share axis = %+v, want fixed 0..1 in %%", a)
	}
	if a := kept[2].Axes; len(a) != 2 || a[1].Text != "ms" {
		t.Errorf("throughput axes = %+v, want both, the right one in ms", a)
	}
}

func TestTailRatio(t *testing.T) {
	t.Parallel()
	d := &chartData{Cols: []column{
		{1, 1, 2, 1, math.NaN()}, // p50: median 1
		{5, 30, 8, 4, math.NaN()},
		{10, 10, 10},
		{20, 20, 20},
	}}
	wl := []workloadData{{p50: 0, p99: 1}, {p50: 2, p99: 3}}
	if got := tailRatio(d, wl, func(w workloadData) int { return w.p99 }); got != 30 {
		t.Errorf("tailRatio = %v, want 30 (the first workload's worst p99 over its median p50)", got)
	}
}

func TestFirstClause(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in, clause, step string
	}{
		{"colon", "Pool of 3 too small for the load: transactions waited", "Pool of 3 too small for the load", "Pool of 3 too small for the load: transactions waited"},
		{"inside brackets", "Grow the pool to at least 5 (with headroom: 8), within max_connections; better, shorten it",
			"Grow the pool to at least 5 (with headroom: 8), within max_connections", "Grow the pool to at least 5 (with headroom: 8), within max_connections"},
		{"inside code", "In the scenario, workload api: `settings: {a: 5s}`. In the application, set them",
			"In the scenario, workload api", "In the scenario, workload api: `settings: {a: 5s}`"},
		{"too short", "Find it: then end it. More", "Find it: then end it", "Find it: then end it"},
		{"whole", "Nothing to cut.", "Nothing to cut", "Nothing to cut"},
	} {
		if got := firstClause(tt.in); got != tt.clause {
			t.Errorf("%s: firstClause = %q, want %q", tt.name, got, tt.clause)
		}
		if got := firstStep(tt.in); got != tt.step {
			t.Errorf("%s: firstStep = %q, want %q", tt.name, got, tt.step)
		}
	}
}
