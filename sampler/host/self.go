package host

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

// self samples the firedrill process, so that a run can tell when the load
// generator, not the database, is the limit (its CPU, its garbage
// collector, goroutines waiting to be scheduled).
//
// Source "firedrill". Values:
//
//	cpu                   cores       CPU time (user + system) per second of the interval: 1 = one core busy
//	cpus                  count       GOMAXPROCS: the cores the Go scheduler uses
//	cpus.online           count       CPUs online on the host
//	cpus.affinity         count       CPUs in firedrill's affinity mask (sched_getaffinity); omitted when unknown
//	cpus.quota            cores       its cgroup's CPU quota (cpu.max); omitted when none is set
//	rss_bytes             bytes       resident memory (Linux)
//	heap_bytes            bytes       heap memory occupied by objects, live or not yet swept
//	goroutines            count       goroutines now
//	gc_count              count       garbage collections completed in the interval
//	gc_pause_ms           ms          stop-the-world pause time in the interval (from the runtime's pause histogram: bucket midpoints)
//	sched_latency_p99_ms  ms          99th percentile of the time runnable goroutines waited for a thread, in the interval; omitted when none waited
//	sched_latency_max_ms  ms          the longest such wait in the interval (upper bound of its histogram bucket)
//
// Detail: nil.
type self struct {
	counters  sampler.Counters
	samples   []metrics.Sample
	pauses    *metrics.Float64Histogram // the previous reading of pauseMetric
	latencies *metrics.Float64Histogram // the previous reading of latencyMetric
	limits    CPULimits                 // read once: what bounds the CPUs firedrill may use
}

var (
	_ sampler.Sampler   = (*self)(nil)
	_ sampler.Momentary = (*self)(nil)
)

// The runtime metrics read.
const (
	heapMetric       = "/memory/classes/heap/objects:bytes"
	goroutinesMetric = "/sched/goroutines:goroutines"
	gcCyclesMetric   = "/gc/cycles/total:gc-cycles"
	pauseMetric      = "/sched/pauses/total/gc:seconds"
	latencyMetric    = "/sched/latencies:seconds"
)

// newSelf builds the "firedrill" sampler with the runtime metrics this Go
// version has.
func newSelf() *self {
	known := map[string]bool{}
	for _, d := range metrics.All() {
		known[d.Name] = true
	}
	s := &self{limits: ReadCPULimits()}
	for _, name := range []string{heapMetric, goroutinesMetric, gcCyclesMetric, pauseMetric, latencyMetric} {
		if known[name] {
			s.samples = append(s.samples, metrics.Sample{Name: name})
		}
	}
	return s
}

func (*self) Name() string { return hostmetric.Self }

// EveryTick: a saturated load generator shows within a moment.
func (*self) EveryTick() bool { return true }

func (s *self) Sample(context.Context) (map[string]float64, any, error) {
	values := map[string]float64{"cpus": float64(runtime.GOMAXPROCS(0)), "cpus.online": float64(s.limits.Online)}
	if s.limits.Affinity > 0 {
		values["cpus.affinity"] = float64(s.limits.Affinity)
	}
	if s.limits.Quota > 0 {
		values["cpus.quota"] = s.limits.Quota
	}
	reading := map[string]float64{}
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return nil, nil, fmt.Errorf("firedrill: getrusage: %w", err)
	}
	reading["cpu_s"] = timevalSeconds(usage.Utime) + timevalSeconds(usage.Stime)
	if rss, ok := residentBytes(); ok {
		values["rss_bytes"] = rss
	}

	metrics.Read(s.samples)
	var pauses, latencies *metrics.Float64Histogram
	for _, m := range s.samples {
		switch m.Name {
		case heapMetric:
			values["heap_bytes"] = float64(m.Value.Uint64())
		case goroutinesMetric:
			values["goroutines"] = float64(m.Value.Uint64())
		case gcCyclesMetric:
			reading["gc_count"] = float64(m.Value.Uint64())
		case pauseMetric:
			pauses = copyHistogram(m.Value.Float64Histogram())
		case latencyMetric:
			latencies = copyHistogram(m.Value.Float64Histogram())
		}
	}

	iv := s.counters.Next(time.Now(), reading)
	if cpu, ok := iv.Rate("cpu_s"); ok {
		values["cpu"] = cpu
	}
	if n, ok := iv.Delta("gc_count"); ok {
		values["gc_count"] = n
	}
	if counts, ok := histogramDelta(s.pauses, pauses); ok {
		values["gc_pause_ms"] = 1000 * histogramSum(counts, pauses.Buckets)
	}
	if counts, ok := histogramDelta(s.latencies, latencies); ok {
		if p99, ok := histogramQuantile(counts, latencies.Buckets, 0.99); ok {
			values["sched_latency_p99_ms"] = 1000 * p99
			values["sched_latency_max_ms"] = 1000 * histogramMax(counts, latencies.Buckets)
		}
	}
	s.pauses, s.latencies = pauses, latencies
	return values, nil, nil
}

// timevalSeconds converts a rusage time.
func timevalSeconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}

// residentBytes reads the process's resident set size from
// /proc/self/statm; ok is false where there is no such file.
func residentBytes() (float64, bool) {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(statm))
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		return 0, false
	}
	return pages * float64(os.Getpagesize()), true
}

// copyHistogram copies the counts, which metrics.Read may reuse.
func copyHistogram(h *metrics.Float64Histogram) *metrics.Float64Histogram {
	return &metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
}

// histogramDelta returns the counts added between two readings; ok is
// false without a previous reading or when the buckets differ.
func histogramDelta(prev, cur *metrics.Float64Histogram) ([]uint64, bool) {
	if prev == nil || cur == nil || len(prev.Counts) != len(cur.Counts) {
		return nil, false
	}
	delta := make([]uint64, len(cur.Counts))
	for i := range cur.Counts {
		if cur.Counts[i] < prev.Counts[i] {
			return nil, false
		}
		delta[i] = cur.Counts[i] - prev.Counts[i]
	}
	return delta, true
}

// bucketValue stands for the values in bucket i ([buckets[i],
// buckets[i+1])): its midpoint, or its finite edge for an open-ended one.
func bucketValue(buckets []float64, i int) float64 {
	lo, hi := buckets[i], buckets[i+1]
	switch {
	case math.IsInf(lo, -1):
		return max(hi, 0)
	case math.IsInf(hi, 1):
		return lo
	default:
		return (lo + hi) / 2
	}
}

// histogramSum estimates the sum of the values counted.
func histogramSum(counts []uint64, buckets []float64) float64 {
	var sum float64
	for i, n := range counts {
		if n > 0 {
			sum += float64(n) * bucketValue(buckets, i)
		}
	}
	return sum
}

// histogramQuantile returns the upper bound of the bucket holding quantile
// q (the finite lower edge for the last, open bucket); ok is false when
// nothing was counted.
func histogramQuantile(counts []uint64, buckets []float64, q float64) (float64, bool) {
	var total uint64
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return 0, false
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, n := range counts {
		seen += n
		if seen >= rank {
			return bucketUpper(buckets, i), true
		}
	}
	return bucketUpper(buckets, len(counts)-1), true
}

// histogramMax returns the upper bound of the highest non-empty bucket.
func histogramMax(counts []uint64, buckets []float64) float64 {
	for i := len(counts) - 1; i >= 0; i-- {
		if counts[i] > 0 {
			return bucketUpper(buckets, i)
		}
	}
	return 0
}

// bucketUpper is bucket i's upper edge, or its lower one when open-ended.
func bucketUpper(buckets []float64, i int) float64 {
	if math.IsInf(buckets[i+1], 1) {
		return buckets[i]
	}
	return buckets[i+1]
}
