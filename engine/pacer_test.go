package engine

import (
	"math"
	"testing"
)

func TestPoissonPacerIsExponential(t *testing.T) {
	t.Parallel()
	const draws = 100000
	tests := []struct {
		name string
		rate float64 // transactions per second
		seed uint64
	}{
		// pgbench's usual -R values.
		{"500 tps", 500, 1},
		{"10 tps", 10, 2},
		// A high rate: the mean gap is 20 µs, so rounding the schedule to
		// whole microseconds must not bias the mean.
		{"50k tps", 50000, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPoissonPacer(tt.rate, 1, tt.seed)
			var gaps Simple
			prev := int64(0)
			for i := range draws {
				at := p.next()
				if at < prev {
					t.Fatalf("draw %d: schedule went back from %d to %d µs", i, prev, at)
				}
				gaps.Add(float64(at - prev))
				prev = at
			}
			wantMean := 1e6 / tt.rate
			// The standard error of the mean of 100k exponential gaps is
			// 0.3 %; 2 % is over six of them.
			if got := gaps.Mean(); math.Abs(got-wantMean) > 0.02*wantMean {
				t.Errorf("mean inter-arrival = %.2f µs, want %.2f ± 2 %%", got, wantMean)
			}
			// An exponential distribution has stddev == mean; a fixed
			// interval (0) or a uniform one (0.58) would fail this.
			if cv := gaps.StdDev() / gaps.Mean(); math.Abs(cv-1) > 0.03 {
				t.Errorf("coefficient of variation = %.3f, want 1 ± 0.03", cv)
			}
		})
	}
}

func TestPoissonPacerSeedsAreReproducible(t *testing.T) {
	t.Parallel()
	// -s/--random-seed must replay the same schedule; different seeds
	// must not.
	a, b, c := newPoissonPacer(100, 1, 42), newPoissonPacer(100, 1, 42), newPoissonPacer(100, 1, 43)
	same, differ := true, false
	for range 1000 {
		x, y, z := a.next(), b.next(), c.next()
		same = same && x == y
		differ = differ || x != z
	}
	if !same {
		t.Error("two pacers with the same seed produced different schedules")
	}
	if !differ {
		t.Error("pacers with different seeds produced the same schedule")
	}
}

// A stage that ramps from zero sends as the rate grows: the count of
// arrivals follows the integral of the rate (a gap drawn at the rate of
// its start, near zero, would land past the ramp and send nothing).
func TestPoissonPacerRampFromZero(t *testing.T) {
	const seconds, top = 8.0, 20.0
	p := newPoissonPacer(top, 1, 7)
	p.rateAt = func(us float64) float64 { return top * math.Min(us/(seconds*1e6), 1) }
	var n, firstHalf int
	for {
		at := p.next()
		if at >= seconds*1e6 {
			break
		}
		n++
		if at < seconds*1e6/2 {
			firstHalf++
		}
	}
	// Expected 80 in all (20 in the first half): Poisson, so ±4σ.
	if n < 80-4*9 || n > 80+4*9 {
		t.Fatalf("%d arrivals in a ramp 0→%g/s over %gs, want about 80", n, top, seconds)
	}
	if firstHalf < 20-4*5 || firstHalf > 20+4*5 || firstHalf == 0 {
		t.Fatalf("%d arrivals in the ramp's first half, want about 20", firstHalf)
	}
}
