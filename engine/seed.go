package engine

import (
	"sync"
	"time"

	"github.com/firedrill/firedrill/script"
)

// Seeding follows pgbench 15 exactly (see script.NewPgbenchSeeds): from
// Config.RandomSeed come each client's generator for the random
// functions, :default_seed, and per pgbench thread (-j) the generator
// that picks scripts. With the same seed, -c and -j, every client's
// random*(), permute() and hash() values equal pgbench's, transaction by
// transaction.

// threadChooser is a pgbench thread's ts_choose_rs: the clients pgbench
// would run on one thread share it to pick each transaction's script.
// Which client draws next depends on timing, as in pgbench, unless the
// thread has a single client.
type threadChooser struct {
	mu  sync.Mutex
	rng script.Rand
}

// pick returns a weight in [0, total) as pgbench's chooseScript draws it.
func (t *threadChooser) pick(total int) int {
	t.mu.Lock()
	w := t.rng.Uniform(0, int64(total-1))
	t.mu.Unlock()
	return int(w)
}

// initSeeds derives every client's and thread's seed once per run.
func (r *run) initSeeds() {
	cfg := r.cfg
	drawDefault := true
	for _, d := range cfg.Defines {
		if d.Name == script.VarDefaultSeed {
			drawDefault = false
		}
	}
	r.seeds = script.NewPgbenchSeeds(cfg.RandomSeed, cfg.Clients, cfg.Threads, drawDefault)
	r.choosers = make([]*threadChooser, len(r.seeds.Threads))
	for t, s := range r.seeds.Threads {
		r.choosers[t] = new(threadChooser)
		r.choosers[t].rng.Seed(s.Choose)
	}
}

// seedClient gives client c its generator, :random_seed and
// :default_seed (unless defined) and its thread's script chooser.
func (r *run) seedClient(c *client) {
	if r.choosers == nil {
		r.initSeeds()
	}
	syms := r.cfg.Symbols
	c.vars.SetInt(syms.Ref(script.VarRandomSeed), int64(r.cfg.RandomSeed))
	if !c.vars.IsSet(syms.Ref(script.VarDefaultSeed)) {
		c.vars.SetInt(syms.Ref(script.VarDefaultSeed), r.seeds.DefaultSeed)
	}
	c.env.Rand = script.NewRand(r.seeds.Clients[c.id])
	c.choose = r.choosers[script.ThreadOf(c.id, r.cfg.Clients, r.cfg.Threads)]
}

// startPacers gives every pgbench thread its --rate pacer, at its share of
// the rate and seeded with the thread's ts_throttle_rs seed, and each
// client its thread's. With a Shape (a ramp of clients) one pacer serves
// all clients, so that inactive clients leave no share of the rate unused.
func (r *run) startPacers(clients []*client) {
	cfg := r.cfg
	n := len(r.seeds.Threads)
	if cfg.Shape != nil {
		n = 1
	}
	pacers := make([]*poissonPacer, n)
	for t := range pacers {
		pacers[t] = newPoissonPacer(cfg.Rate, n, r.seeds.Threads[t].Throttle)
		if cfg.Shape != nil {
			pacers[t].rateAt = func(us float64) float64 {
				_, rate := cfg.Shape(time.Duration(us) * time.Microsecond)
				return rate
			}
		}
	}
	r.pacer = pacers[0] // non-nil: the run is throttled
	for _, c := range clients {
		c.pacer = pacers[min(script.ThreadOf(c.id, cfg.Clients, cfg.Threads), n-1)]
	}
}
