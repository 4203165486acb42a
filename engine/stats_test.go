package engine

import (
	"math"
	"testing"
)

// directMeanStdDev computes the population mean and standard deviation of
// values the textbook way, as a reference for Simple's running sums.
func directMeanStdDev(values []float64) (mean, stddev float64) {
	if len(values) == 0 {
		return 0, 0
	}
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	for _, v := range values {
		stddev += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(stddev / float64(len(values)))
}

func simpleOf(values []float64) Simple {
	var s Simple
	for _, v := range values {
		s.Add(v)
	}
	return s
}

// closeTo reports whether got is within a relative tolerance of want, with
// an absolute floor for values near zero.
func closeTo(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Max(1, math.Abs(want))
}

func TestSimpleMatchesDirectComputation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []float64
	}{
		// Nothing recorded: everything reads as zero rather than NaN.
		{"empty", nil},
		// One value: the mean is the value and there is no spread.
		{"single", []float64{1234}},
		// Identical values (latencies are whole microseconds): the sums are
		// exact, so the spread is exactly zero, not NaN from a negative
		// variance.
		{"constant", []float64{1500, 1500, 1500, 1500, 1500, 1500, 1500}},
		// A textbook series with a known stddev of 2.
		{"known", []float64{2, 4, 4, 4, 5, 5, 7, 9}},
		// Microsecond latencies of a realistic run, with a long tail.
		{"latencies", []float64{812, 955, 1020, 1104, 998, 870, 15230, 1001, 990, 1003, 250000}},
		// Zeros (lag without throttling delay) mixed with values.
		{"zeros", []float64{0, 0, 0, 10, 0, 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := simpleOf(tt.values)
			mean, stddev := directMeanStdDev(tt.values)
			if s.Count != int64(len(tt.values)) {
				t.Errorf("Count = %d, want %d", s.Count, len(tt.values))
			}
			if !closeTo(s.Mean(), mean, 1e-12) {
				t.Errorf("Mean() = %v, want %v", s.Mean(), mean)
			}
			if !closeTo(s.StdDev(), stddev, 1e-9) {
				t.Errorf("StdDev() = %v, want %v", s.StdDev(), stddev)
			}
			if len(tt.values) == 0 {
				return
			}
			lo, hi := tt.values[0], tt.values[0]
			for _, v := range tt.values {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
			if s.Min != lo || s.Max != hi {
				t.Errorf("Min, Max = %v, %v, want %v, %v", s.Min, s.Max, lo, hi)
			}
		})
	}
}

func TestSimpleMergeEqualsAddingEverything(t *testing.T) {
	t.Parallel()
	series := []float64{500, 20, 7000, 35, 35, 999999, 1, 64, 4096}
	// Every split point, including empty halves on either side: merging
	// must take min and max from the non-empty side, not from the zero
	// values of an empty accumulator.
	for cut := 0; cut <= len(series); cut++ {
		a, b := simpleOf(series[:cut]), simpleOf(series[cut:])
		a.Merge(&b)
		if want := simpleOf(series); a != want {
			t.Errorf("cut %d: merged = %+v, want %+v", cut, a, want)
		}
	}
}

func TestStatsMergeFailuresTotal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		a, b          Stats
		failures      int64 // of the merged stats
		total         int64
		count, retrys int64
	}{
		// Two empty stats stay empty.
		{name: "empty", failures: 0, total: 0},
		// Successes only: total is the success count.
		{name: "successes", a: Stats{Count: 10}, b: Stats{Count: 5}, total: 15, count: 15},
		// Skipped transactions count towards the total but not as successes.
		{name: "skipped", a: Stats{Count: 3, Skipped: 4}, b: Stats{Skipped: 1}, total: 8, count: 3},
		// Both failure kinds add up; retried and retries are not part of
		// the total (a retried transaction is counted once, by outcome).
		{
			name:     "failures and retries",
			a:        Stats{Count: 7, SerializationFailures: 2, Retried: 3, Retries: 9},
			b:        Stats{Count: 1, DeadlockFailures: 5, Retried: 1, Retries: 1},
			failures: 7, total: 15, count: 8, retrys: 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.a
			got.Merge(&tt.b)
			if got.Failures() != tt.failures {
				t.Errorf("Failures() = %d, want %d", got.Failures(), tt.failures)
			}
			if got.Total() != tt.total {
				t.Errorf("Total() = %d, want %d", got.Total(), tt.total)
			}
			if got.Count != tt.count || got.Retries != tt.retrys {
				t.Errorf("Count, Retries = %d, %d, want %d, %d", got.Count, got.Retries, tt.count, tt.retrys)
			}
			if got.Retried != tt.a.Retried+tt.b.Retried || got.Skipped != tt.a.Skipped+tt.b.Skipped ||
				got.Late != tt.a.Late+tt.b.Late {
				t.Errorf("merged %+v is not the field-wise sum of %+v and %+v", got, tt.a, tt.b)
			}
		})
	}
}

func TestStatsMergeKeepsEveryField(t *testing.T) {
	t.Parallel()
	// Every field set to a distinct value: a field Merge forgets shows up
	// as a mismatch against doubling.
	one := Stats{
		Count: 1, Skipped: 2, Retried: 3, Retries: 4, SerializationFailures: 5,
		DeadlockFailures: 6, Late: 7, Latency: simpleOf([]float64{10, 30}), Lag: simpleOf([]float64{1, 2, 3}),
	}
	got := one
	got.Merge(&one)
	want := Stats{
		Count: 2, Skipped: 4, Retried: 6, Retries: 8, SerializationFailures: 10,
		DeadlockFailures: 12, Late: 14, Latency: simpleOf([]float64{10, 30, 10, 30}), Lag: simpleOf([]float64{1, 2, 3, 1, 2, 3}),
	}
	if got != want {
		t.Errorf("Merge with itself = %+v, want %+v", got, want)
	}
}
