package engine

import (
	"math"
	"math/rand/v2"
	"sync"
)

// poissonPacer schedules transaction starts as a Poisson process at a
// total rate shared by all clients: a free client takes the next slot, as
// pgbench's throttling does. Start times are in µs since the run's start.
type poissonPacer struct {
	mu        sync.Mutex
	nextAt    float64
	meanDelay float64 // µs
	rng       *rand.Rand
	// rateAt, if set, makes the rate vary over time (stages): the
	// transactions/s wanted at a moment (µs since the start).
	rateAt func(us float64) float64
}

func newPoissonPacer(rate float64, seed uint64) *poissonPacer {
	return &poissonPacer{meanDelay: 1e6 / rate, rng: rand.New(rand.NewPCG(seed, 0x7ac3))}
}

// next returns the scheduled start of the next transaction.
func (p *poissonPacer) next() int64 {
	p.mu.Lock()
	// Exponential inter-arrival times; 1-u avoids log(0).
	e := -math.Log(1 - p.rng.Float64())
	if p.rateAt == nil {
		p.nextAt += e * p.meanDelay
	} else {
		// A time-varying rate: the gap is drawn at the current rate; a
		// ramp changes slowly compared with the gaps, so this stays close
		// to the exact inhomogeneous process. A rate of zero pauses
		// arrivals until the shape resumes them.
		for i := 0; i < 1_000_000; i++ {
			if r := p.rateAt(p.nextAt); r > 0 {
				p.nextAt += e * 1e6 / r
				break
			}
			p.nextAt += 10_000
		}
	}
	at := int64(p.nextAt + 0.5)
	p.mu.Unlock()
	return at
}
