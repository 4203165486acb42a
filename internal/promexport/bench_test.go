package promexport

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/firedrill/firedrill/timeline"
)

// benchTick is one tick of a busy run: 4 workloads whose intervals hold
// 5,000 latencies each spread over 0.2 ms–2 s, and 300 sampled values.
func benchTick() ([]timeline.Interval, []timeline.Sample) {
	r := rand.New(rand.NewPCG(1, 2))
	var ivs []timeline.Interval
	for w := range 4 {
		h := timeline.NewHistogram()
		for range 5000 {
			h.Record(int64(200 * (1 + r.ExpFloat64()*50)))
		}
		ivs = append(ivs, timeline.Interval{Workload: fmt.Sprintf("w%d", w), Start: 0, End: 1, Count: 5000,
			Latency: h, LatencyPct: h.Percentiles(), Errors: map[string]int64{"40001": 3}})
	}
	values := map[string]float64{}
	for i := range 100 {
		values[fmt.Sprintf("public.t%d.n_dead_tup", i)] = float64(i)
		values[fmt.Sprintf("public.t%d.seq_scan", i)] = float64(i)
		values[fmt.Sprintf("wait.LWLock:ev%d", i)] = 1
	}
	return ivs, []timeline.Sample{
		{Source: "pg_stat_user_tables", Values: values},
		{Source: "pg_stat_activity", Values: values},
	}
}

// What the runner's clock goroutine pays per tick for the exporter
// (rebucketing each interval's HDR histogram, keeping the samples).
func BenchmarkTick(b *testing.B) {
	ivs, samples := benchTick()
	e := New("bench")
	e.Start(Labels{Scenario: "s", RunID: "r", Backend: "postgres"}, time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		e.Tick(1, ivs, samples)
	}
}

// What one scrape costs: collecting and writing the text exposition.
func BenchmarkScrape(b *testing.B) {
	ivs, samples := benchTick()
	e := New("bench")
	e.Start(Labels{Scenario: "s", RunID: "r", Backend: "postgres"}, time.Minute)
	e.Tick(1, ivs, samples)
	reg := prometheus.NewRegistry()
	reg.MustRegister(e)
	b.ReportAllocs()
	for b.Loop() {
		fams, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range fams {
			if err := enc.Encode(f); err != nil {
				b.Fatal(err)
			}
		}
	}
}
