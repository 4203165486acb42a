package engine

import (
	"math"
	"testing"
	"time"
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

// ScheduledStarts is the count a seed draws: Poisson around rate ×
// duration, the same for a seed every time, different across seeds. The
// HTTP bench's steady −2 % at -j 1 (1,000/s for 8 s, seed 1) was this
// draw: 7,840 arrivals, 1.8σ under the mean, in every pair.
func TestScheduledStartsIsTheSeedsDraw(t *testing.T) {
	t.Parallel()
	cfg := Config{Rate: 1000, Duration: 8 * time.Second, Clients: 50, Threads: 1, RandomSeed: 1}
	if got := ScheduledStarts(cfg); got != 7840 {
		t.Errorf("seed 1, -j 1, 1,000/s for 8 s: %d starts scheduled, want 7840 (pgbench's schedule)", got)
	}
	const seeds = 40
	mean := cfg.Rate * cfg.Duration.Seconds()
	sd := math.Sqrt(mean)
	var sum float64
	distinct := map[int64]bool{}
	for _, j := range []int{1, 2} {
		for s := range uint64(seeds) {
			c := cfg
			c.Threads, c.RandomSeed = j, s+1
			n := ScheduledStarts(c)
			if math.Abs(float64(n)-mean) > 5*sd {
				t.Errorf("-j %d seed %d: %d starts, want %.0f ± 5σ (%.0f)", j, s+1, n, mean, 5*sd)
			}
			sum += float64(n)
			distinct[n] = true
		}
	}
	// The mean of 80 draws is within 4σ/√80 (0.5 %) of rate × duration.
	if avg := sum / (2 * seeds); math.Abs(avg-mean) > 4*sd/math.Sqrt(2*seeds) {
		t.Errorf("mean of %d seeds' counts %.1f, want %.0f ± %.1f", 2*seeds, avg, mean, 4*sd/math.Sqrt(2*seeds))
	}
	if len(distinct) < seeds {
		t.Errorf("only %d distinct counts over %d seeds", len(distinct), 2*seeds)
	}
	if n := ScheduledStarts(Config{Duration: time.Second, Clients: 1}); n != 0 {
		t.Errorf("closed model: %d starts scheduled, want 0", n)
	}
}
