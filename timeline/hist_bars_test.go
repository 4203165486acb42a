package timeline

import (
	"math/rand/v2"
	"testing"
)

// Rebucket counts each value where HdrHistogram's own iterator puts it:
// under the first bound at or above its range's highest value.
func TestRebucketMatchesHdrDistribution(t *testing.T) {
	t.Parallel()
	bounds := []int64{100, 250, 500, 1000, 2500, 5000, 10_000, 100_000, 1_000_000, 60_000_000}
	r := rand.New(rand.NewPCG(3, 4))
	h := NewHistogram()
	for range 20_000 {
		h.Record(int64(1 + r.ExpFloat64()*r.ExpFloat64()*20_000))
	}
	h.Record(HistHighest) // the top bucket
	h.Record(1)
	for _, b := range bounds { // exactly on the bounds
		h.Record(b)
	}
	want := make([]uint64, len(bounds)+1)
	var wantSum float64
	for _, bar := range h.hist().Distribution() {
		i := 0
		for i < len(bounds) && bounds[i] < bar.To {
			i++
		}
		want[i] += uint64(bar.Count)
		wantSum += float64(bar.Count) * float64(bar.From+bar.To+1) / 2
	}
	got := make([]uint64, len(bounds)+1)
	sum := h.Rebucket(bounds, got)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bucket %d: %d, HdrHistogram's iterator %d (all: %v vs %v)", i, got[i], want[i], got, want)
			break
		}
	}
	if d := sum/wantSum - 1; d > 1e-4 || d < -1e-4 { // midpoints of ranges of equal values differ by at most one unit
		t.Errorf("sum %v, want %v", sum, wantSum)
	}
	var total uint64
	for _, n := range got {
		total += n
	}
	if int64(total) != h.Count() {
		t.Errorf("%d values rebucketed of %d", total, h.Count())
	}
}

// Rebucket reads the counts once: no iterator walk per interval.
func BenchmarkRebucket(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	h := NewHistogram()
	for range 5000 {
		h.Record(int64(200 * (1 + r.ExpFloat64()*50)))
	}
	bounds := []int64{100, 250, 500, 1000, 2500, 5000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000}
	counts := make([]uint64, len(bounds)+1)
	b.ReportAllocs()
	for b.Loop() {
		h.Rebucket(bounds, counts)
	}
}
