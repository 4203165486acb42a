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
}

func newPoissonPacer(rate float64, seed uint64) *poissonPacer {
	return &poissonPacer{meanDelay: 1e6 / rate, rng: rand.New(rand.NewPCG(seed, 0x7ac3))}
}

// next returns the scheduled start of the next transaction.
func (p *poissonPacer) next() int64 {
	p.mu.Lock()
	// Exponential inter-arrival times; 1-u avoids log(0).
	p.nextAt += -math.Log(1-p.rng.Float64()) * p.meanDelay
	at := int64(p.nextAt + 0.5)
	p.mu.Unlock()
	return at
}
