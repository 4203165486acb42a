package sampler_test

import (
	"testing"
	"time"

	"github.com/firedrill/firedrill/sampler"
)

// TestCounters turns readings into deltas and rates, and knows nothing
// about the first interval, new counters and counters that went down.
func TestCounters(t *testing.T) {
	t.Parallel()
	var c sampler.Counters
	start := time.Unix(1700000000, 0)
	iv := c.Next(start, map[string]float64{"a": 10, "reset": 100})
	if _, ok := iv.Delta("a"); ok || iv.Seconds != 0 {
		t.Errorf("first reading: an interval of %v s", iv.Seconds)
	}
	iv = c.Next(start.Add(2*time.Second), map[string]float64{"a": 30, "reset": 5, "new": 7})
	for _, tc := range []struct {
		name        string
		delta, rate float64
		ok          bool
	}{
		{"a", 20, 10, true},    // grew by 20 in 2 s
		{"reset", 0, 0, false}, // went down: a reset, nothing known
		{"new", 0, 0, false},   // not in the previous reading
		{"absent", 0, 0, false},
	} {
		delta, ok := iv.Delta(tc.name)
		rate, rateOK := iv.Rate(tc.name)
		if delta != tc.delta || ok != tc.ok || rate != tc.rate || rateOK != tc.ok {
			t.Errorf("%s: delta %v %v, rate %v %v; want %v %v %v", tc.name, delta, ok, rate, rateOK, tc.delta, tc.rate, tc.ok)
		}
	}
	iv = c.Next(start.Add(3*time.Second), map[string]float64{"reset": 6})
	if delta, ok := iv.Delta("reset"); !ok || delta != 1 {
		t.Errorf("after the reset: delta %v %v, want 1", delta, ok)
	}
}
