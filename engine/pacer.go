package engine

import (
	"math"
	"sync"
	"time"

	"github.com/firedrill/firedrill/script"
)

// poissonPacer schedules transaction starts as a Poisson process: a free
// client takes the next slot, as pgbench's throttling does. As in pgbench,
// each thread (-j) has its own pacer at its share of the rate, drawing
// from pgbench's ts_throttle_rs (script.PgbenchSeeds), so that the same
// seed gives pgbench's schedule. Start times are in µs since the run's
// start.
type poissonPacer struct {
	mu        sync.Mutex
	nextAt    float64
	meanDelay float64 // µs: pgbench's throttle_delay (per thread)
	threads   float64 // the pacers sharing the rate
	rng       script.Rand
	// rateAt, if set, makes the rate vary over time (stages): the
	// transactions/s wanted at a moment (µs since the start), over all
	// pacers.
	rateAt func(us float64) float64
}

// newPoissonPacer returns one of threads pacers sharing rate
// transactions/s.
func newPoissonPacer(rate float64, threads int, seed uint64) *poissonPacer {
	p := &poissonPacer{meanDelay: 1e6 / rate * float64(threads), threads: float64(threads)}
	p.rng.Seed(seed)
	return p
}

// next returns the scheduled start of the next transaction.
func (p *poissonPacer) next() int64 {
	p.mu.Lock()
	if p.rateAt == nil {
		// pgbench's getPoissonRand: whole microseconds.
		p.nextAt += float64(p.rng.Poisson(p.meanDelay))
	} else {
		// Exponential inter-arrival times; 1-u avoids log(0).
		e := -math.Log(1 - p.rng.Float64())
		// A time-varying rate: the gap is where the expected count of
		// arrivals since the last one reaches e, integrated in steps of
		// at most 10 ms, so a ramp from zero starts sending as the rate
		// grows (a gap drawn at the rate of its start would land past the
		// ramp). A rate of zero pauses arrivals until the shape resumes
		// them.
		for i := 0; i < 1_000_000; i++ {
			r := p.rateAt(p.nextAt) / p.threads // per second
			step := 10_000.0                    // µs
			if r > 0 {
				if need := e * 1e6 / r; need <= step {
					p.nextAt += need
					break
				}
				e -= r * step / 1e6
			}
			p.nextAt += step
		}
	}
	at := int64(p.nextAt + 0.5)
	p.mu.Unlock()
	return at
}

// ScheduledStarts is how many transaction starts the open model's
// schedule places before the end of a run of cfg (Rate, Duration,
// Clients, Threads, RandomSeed and Defines; 0 without a rate, a
// duration, or with a Shape): the Poisson draw that a run with cfg's
// seed makes, which a run that keeps up starts in full. Rate × Duration
// is only that draw's mean: a count of N arrivals spreads by √N (±1.1 %
// at 8,000), and a fixed seed draws the same count every run, so a rate
// achieved is judged against this count first.
func ScheduledStarts(cfg Config) int64 {
	if cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.Shape != nil || cfg.Clients <= 0 {
		return 0
	}
	r := &run{cfg: &cfg}
	r.initSeeds() // as Run's clients are seeded
	end := int64(cfg.Duration / time.Microsecond)
	n := len(r.seeds.Threads)
	var starts int64
	for t := range n {
		p := newPoissonPacer(cfg.Rate, n, r.seeds.Threads[t].Throttle)
		for p.next() < end { // client.loop runs a slot due before endUS
			starts++
		}
	}
	return starts
}
