package timeline

import (
	"math"
	"math/bits"
)

// histHalfMagnitude and histUnitMagnitude are the geometry of the HDR
// histograms NewHistogram makes (HistLowest, HistDigits): counts[] holds
// buckets of 2^histHalfMagnitude sub-buckets each, as HdrHistogram lays
// them out.
var histHalfMagnitude, histUnitMagnitude = func() (int, int) {
	largest := 2 * int64(math.Pow10(HistDigits)) // single-unit resolution up to here
	subBucketCountMagnitude := bits.Len64(uint64(largest - 1))
	return subBucketCountMagnitude - 1, bits.Len64(uint64(HistLowest)) - 1
}()

// Rebucket adds the histogram's values to counts, which has one more
// element than boundsUS (increasing upper bounds, µs; the last element
// counts the values above every bound), and returns the values' sum (µs,
// each range of equivalent values at its middle: within HistDigits'
// precision). A value counts under the first bound at or above the
// highest value equivalent to it. It is for exporters with fixed buckets
// (Prometheus's), once per interval: it reads the histogram's counts
// once, without walking HdrHistogram's iterator.
func (h *Histogram) Rebucket(boundsUS []int64, counts []uint64) (sumUS float64) {
	hist := h.hist()
	if hist.TotalCount() == 0 {
		return 0
	}
	snap := hist.Export()
	half := int32(1) << histHalfMagnitude
	b := 0
	for idx, n := range snap.Counts {
		if n <= 0 {
			continue
		}
		bucket := (int32(idx) >> histHalfMagnitude) - 1
		sub := (int32(idx) & (half - 1)) + half
		if bucket < 0 {
			sub -= half
			bucket = 0
		}
		shift := uint(int(bucket) + histUnitMagnitude)
		low := int64(sub) << shift
		size := int64(1) << shift
		high := low + size - 1
		for b < len(boundsUS) && boundsUS[b] < high {
			b++
		}
		counts[b] += uint64(n)
		sumUS += float64(n) * float64(low+size/2)
	}
	return sumUS
}
