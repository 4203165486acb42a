package timeline

import "testing"

// Subtract leaves exactly the values recorded after the subtracted part:
// the same count, percentiles and maximum as a histogram of those alone.
func TestHistogramSubtract(t *testing.T) {
	t.Parallel()
	early, late, all := NewHistogram(), NewHistogram(), NewHistogram()
	for v := int64(1); v <= 5000; v++ {
		early.Record(v * 3)
		all.Record(v * 3)
	}
	for v := int64(1); v <= 700; v++ {
		late.Record(v*11 + 40000)
		all.Record(v*11 + 40000)
	}
	all.Subtract(early)
	if all.Count() != late.Count() || all.Percentiles() != late.Percentiles() || all.Min() != late.Min() {
		t.Errorf("after Subtract: count %d %+v min %d; want count %d %+v min %d",
			all.Count(), all.Percentiles(), all.Min(), late.Count(), late.Percentiles(), late.Min())
	}
	// More than h holds: nothing goes negative.
	all.Subtract(early)
	if all.Count() != late.Count() {
		t.Errorf("subtracting values h lacks changed its count: %d, want %d", all.Count(), late.Count())
	}
}
