package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/firedrill/firedrill/timeline"
)

// Every percentile of a command histogram is the true one or above it by at
// most a bucket's width: exact below 64 µs, within 1/32 (3.2 %) above.
func TestCommandHistogramPercentiles(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		values func(i int) int64
		n      int
	}{
		{"one value", func(int) int64 { return 1234 }, 1},
		{"constant", func(int) int64 { return 250 }, 1000},
		{"zero latencies", func(int) int64 { return 0 }, 10},
		{"small exact values", func(i int) int64 { return int64(i % 64) }, 6400},
		{"uniform 1 µs to 10 ms", func(int) int64 { return 1 + rng.Int64N(10_000) }, 100_000},
		// The shape of a query's latencies: a lognormal body around
		// 200 µs with a tail to seconds.
		{"lognormal", func(int) int64 { return int64(math.Exp(rng.NormFloat64()*1.5 + math.Log(200))) }, 100_000},
		{"beyond an hour is clamped", func(i int) int64 { return int64(i) * 1_000_000_000 }, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHistogram()
			vals := make([]int64, tc.n)
			for i := range vals {
				v := tc.values(i)
				h.Record(v)
				vals[i] = min(v, timeline.HistHighest)
			}
			slices.Sort(vals)
			if got := h.Count(); got != int64(tc.n) {
				t.Fatalf("Count = %d, want %d", got, tc.n)
			}
			p := h.Percentiles()
			if p.Max != vals[len(vals)-1] {
				t.Errorf("Max = %d, want %d", p.Max, vals[len(vals)-1])
			}
			got := []int64{p.P50, p.P90, p.P95, p.P99, p.P999}
			for i, q := range timeline.StandardQuantiles {
				rank := max(int(q/100*float64(tc.n)+0.5), 1)
				want := vals[rank-1]
				hi := want + want/32
				if want < 64 {
					hi = want
				}
				if got[i] < want || got[i] > hi {
					t.Errorf("p%g = %d, want %d (at most %d)", q, got[i], want, hi)
				}
			}
		})
	}
}

// Clients record into one histogram at once: nothing is lost.
func TestCommandHistogramConcurrent(t *testing.T) {
	t.Parallel()
	h := newTestHistogram()
	var wg sync.WaitGroup
	const goroutines, each = 8, 20_000
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				h.Record(int64(g*1000 + i%5000))
			}
		}()
	}
	wg.Wait()
	if got := h.Count(); got != goroutines*each {
		t.Fatalf("Count = %d, want %d", got, goroutines*each)
	}
	if got := h.Max(); got != 7*1000+4999 {
		t.Fatalf("Max = %d, want %d", got, 7*1000+4999)
	}
}

// A bucket that passes 2^32 values keeps counting.
func TestCommandHistogramWrap(t *testing.T) {
	t.Parallel()
	h := newTestHistogram()
	h.Record(100)
	o, s := cmdBucket(100)
	h.arena.buckets(h.octaves[o].Load())[s].Store(math.MaxUint32)
	h.Record(100)
	h.Record(100)
	if got, want := h.Count(), int64(math.MaxUint32)+2; got != want {
		t.Fatalf("Count = %d, want %d", got, want)
	}
	h.Record(5000)
	if p := h.Percentiles(); p.P999 > 100+100/32 || p.Max != 5000 {
		t.Fatalf("percentiles after a wrap: %+v", p)
	}
}

// Recording allocates only the first time a power of two is reached, and
// a command's histogram stays small: what makes a 100,000-command script
// affordable.
func TestCommandHistogramCost(t *testing.T) {
	h := newTestHistogram()
	for us := int64(1); us < 100_000; us *= 2 {
		h.Record(us)
	}
	if a := testing.AllocsPerRun(1000, func() { h.Record(777) }); a != 0 {
		t.Errorf("Record allocates %.1f times per call once its bucket exists", a)
	}
	if size := unsafe.Sizeof(*h); size > 128 {
		t.Errorf("an empty command histogram takes %d bytes, want at most 128", size)
	}
}

func newTestHistogram() *cmdHistogram {
	return &cmdHistogram{arena: newCmdArena(1)}
}

func TestCommandBucketBounds(t *testing.T) {
	t.Parallel()
	for _, us := range []int64{0, 1, 31, 32, 63, 64, 65, 127, 128, 1000, 1 << 20, timeline.HistHighest} {
		o, s := cmdBucket(us)
		if o < 0 || o >= cmdOctaves || s < 0 || s >= cmdSub {
			t.Fatalf("cmdBucket(%d) = %d, %d: out of range", us, o, s)
		}
		hi := cmdBucketHigh(o, s)
		if hi < us || (us < 64 && hi != us) || float64(hi-us) > float64(us)/32 {
			t.Errorf("cmdBucket(%d): bucket's highest value %d", us, hi)
		}
		if o2, s2 := cmdBucket(hi); o2 != o || s2 != s {
			t.Errorf("cmdBucket(%d) = %d,%d but its highest value %d is in %d,%d", us, o, s, hi, o2, s2)
		}
	}
}
