package promexport

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/firedrill/firedrill/timeline"
)

// gather collects e's series as the registry serves them.
func gather(t *testing.T, e *Exporter) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(e); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// interval is a recorded interval of n transactions of latency us each.
func interval(workload string, start, end float64, us int64, n int) timeline.Interval {
	h := timeline.NewHistogram()
	for range n {
		h.Record(us)
	}
	return timeline.Interval{Workload: workload, Start: start, End: end, Count: int64(n), Clients: 4,
		Latency: h, LatencyPct: h.Percentiles()}
}

// Intervals add up into counters and a classic histogram; failed tries
// split by code and kind; the last interval gives the gauges; the
// shard is a label when there is one; nothing is served before Start.
func TestExporterAccumulatesIntervals(t *testing.T) {
	t.Parallel()
	e := New("v", testNames()...)
	e.Tick(0.5, []timeline.Interval{interval("w", 0, 0.5, 1000, 3)}, nil) // before Start: dropped
	if got := gather(t, e); len(got) != 0 {
		t.Fatalf("before Start: %d families", len(got))
	}
	e.Start(Labels{Scenario: "s", RunID: "r", Backend: "postgres", Shard: "1/4"}, 10*time.Second)
	a := interval("w", 0, 1, 2000, 10) // 2 ms: the 2.5 ms bucket
	a.Failed = 3
	a.Errors = map[string]int64{"40P01": 2, "53300": 4}
	a.Refused = map[string]int64{"53300": 4}
	b := interval("w", 1, 2, 300_000, 5) // 300 ms: the 500 ms bucket
	b.Rate, b.LagMaxUS = 50, 7000
	b.Errors = map[string]int64{"40P01": 1}
	e.Tick(1, []timeline.Interval{a}, []timeline.Sample{{Source: "locks", Values: map[string]float64{"blocked": 2, "max_wait_s": 1.5}}})
	e.Tick(2, []timeline.Interval{b}, []timeline.Sample{{Source: "locks", Error: "timeout"}})
	fams := gather(t, e)

	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		v, ok := sum(fams, name, labels)
		if !ok {
			t.Errorf("%s%v: not served", name, labels)
		}
		return v
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"firedrill_transactions_total", map[string]string{"workload": "w", "shard": "1/4", "backend": "postgres"}, 15},
		{"firedrill_transactions_failed_total", nil, 3},
		{"firedrill_errors_total", map[string]string{"code": "40P01", "kind": "transaction"}, 3},
		{"firedrill_errors_total", map[string]string{"code": "53300", "kind": "refused"}, 4},
		{"firedrill_latency_seconds", nil, 15}, // the histogram's count
		{"firedrill_transactions_per_second", nil, 5},
		{"firedrill_offered_rate_per_second", nil, 50},
		{"firedrill_schedule_lag_max_seconds", nil, 0.007},
		{"firedrill_clients", nil, 4},
		{"firedrill_run_duration_seconds", nil, 10},
		// The failed read keeps the values read before, and says so.
		{"firedrill_locks_blocked", nil, 2},
		{"firedrill_locks_max_wait_seconds", nil, 1.5},
		{"firedrill_sampler_up", map[string]string{"source": "locks"}, 0},
		{"firedrill_sampler_errors_total", map[string]string{"source": "locks"}, 1},
	} {
		if got := value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := sum(fams, "firedrill_errors_total", map[string]string{"code": "53300", "kind": "transaction"}); ok {
		t.Errorf("refused tries counted as transaction errors too")
	}
	h := fams["firedrill_latency_seconds"].GetMetric()[0].GetHistogram()
	cum := map[float64]uint64{}
	for _, bk := range h.GetBucket() {
		cum[bk.GetUpperBound()] = bk.GetCumulativeCount()
	}
	if cum[0.001] != 0 || cum[0.0025] != 10 || cum[0.25] != 10 || cum[0.5] != 15 || cum[60] != 15 {
		t.Errorf("buckets %v: want 10 at ≤2.5 ms, 15 at ≤500 ms", cum)
	}
	if s := h.GetSampleSum(); s < 1.51 || s > 1.53 { // 10 × 2 ms + 5 × 300 ms, within HDR's 0.1 %
		t.Errorf("sum %v s, want 1.52", s)
	}
	e.Finish()
	if v, _ := sum(gather(t, e), "firedrill_run_finished", nil); v != 1 {
		t.Errorf("run_finished %v after Finish", v)
	}
	// A new run drops the previous one's series.
	e.Start(Labels{Scenario: "s", RunID: "r2", Backend: "postgres"}, time.Second)
	if _, ok := sum(gather(t, e), "firedrill_transactions_total", nil); ok {
		t.Errorf("the previous run's transactions are still served")
	}
}
