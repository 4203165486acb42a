package host

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// TestSelfLive burns CPU and collects garbage between two readings and
// sees both.
func TestSelfLive(t *testing.T) {
	t.Parallel()
	s := newSelf()
	first, _, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"cpu", "gc_count", "gc_pause_ms"} {
		if _, ok := first[key]; ok {
			t.Errorf("first reading has %s, want no interval values yet", key)
		}
	}
	deadline := time.Now().Add(100 * time.Millisecond)
	var sink []byte
	for time.Now().Before(deadline) {
		sink = make([]byte, 1<<16)
	}
	_ = sink
	runtime.GC()
	values, detail, err := s.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if detail != nil {
		t.Errorf("detail %v, want nil", detail)
	}
	if values["cpu"] <= 0 || values["gc_count"] < 1 || values["goroutines"] < 1 ||
		values["heap_bytes"] <= 0 || values["rss_bytes"] <= 0 || values["cpus"] != float64(runtime.GOMAXPROCS(0)) {
		t.Errorf("values %v", values)
	}
	if _, ok := values["gc_pause_ms"]; !ok {
		t.Errorf("gc_pause_ms missing from %v", values)
	}
}

// TestHistogramMath checks the sums and quantiles on a fixed histogram
// with open-ended buckets at both ends.
func TestHistogramMath(t *testing.T) {
	t.Parallel()
	h := &metrics.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0, 0.001, 0.002, math.Inf(1)},
		Counts:  []uint64{0, 90, 9, 1},
	}
	prev := &metrics.Float64Histogram{Buckets: h.Buckets, Counts: []uint64{0, 10, 0, 0}}
	delta, ok := histogramDelta(prev, h)
	if !ok {
		t.Fatal("no delta")
	}
	// 80 in [0, 1ms) at 0.5ms, 9 in [1, 2ms) at 1.5ms, 1 in [2ms, ∞) at 2ms.
	if got, want := histogramSum(delta, h.Buckets), 80*0.0005+9*0.0015+0.002; math.Abs(got-want) > 1e-12 {
		t.Errorf("sum %v, want %v", got, want)
	}
	if got, _ := histogramQuantile(delta, h.Buckets, 0.5); got != 0.001 {
		t.Errorf("p50 %v, want the upper edge 0.001", got)
	}
	if got, _ := histogramQuantile(delta, h.Buckets, 0.99); got != 0.002 {
		t.Errorf("p99 %v, want 0.002", got)
	}
	if got := histogramMax(delta, h.Buckets); got != 0.002 {
		t.Errorf("max %v, want the open bucket's lower edge 0.002", got)
	}
	if _, ok := histogramQuantile(make([]uint64, 4), h.Buckets, 0.99); ok {
		t.Error("a quantile of nothing")
	}
	if _, ok := histogramDelta(h, prev); ok {
		t.Error("a delta from counts that went down")
	}
}
