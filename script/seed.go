package script

// PgbenchSeeds are the seeds pgbench 15 gives its generators for one
// --random-seed value. pgbench seeds a base pg_prng with the --random-seed
// value and draws, in this order: one seed per client for the random
// functions (cs_func_rs, clients 0..c-1), then :default_seed unless -D
// defines it, then three seeds per thread (ts_choose_rs, ts_throttle_rs,
// ts_sample_rs, threads 0..j-1). The client count therefore changes
// :default_seed and the threads' seeds, but the thread count changes no
// client's draws.
type PgbenchSeeds struct {
	// Clients[i] seeds client i's generator for random*().
	Clients []uint64
	// DefaultSeed is :default_seed; zero (and not drawn) when the caller
	// said -D default_seed is set.
	DefaultSeed int64
	// Threads[t] are thread t's seeds.
	Threads []ThreadSeeds
}

// ThreadSeeds are one pgbench thread's generators' seeds.
type ThreadSeeds struct {
	Choose   uint64 // picks the script of each transaction (-b/-f weights)
	Throttle uint64 // --rate: Poisson delays
	Sample   uint64 // --sampling-rate: which transactions are logged
}

// PgbenchThreads returns how many threads pgbench runs for -c clients
// and -j threads: -j, at least 1 and at most the clients.
func PgbenchThreads(clients, threads int) int {
	return max(min(threads, clients), 1)
}

// ThreadOf returns the thread pgbench gives client id when clients are
// divided among threads in contiguous blocks, the earlier threads taking
// the larger blocks (5 clients on 2 threads: 0-2, 3-4).
func ThreadOf(id, clients, threads int) int {
	threads = PgbenchThreads(clients, threads)
	dealt := 0
	for t := range threads {
		n := (clients - dealt + threads - t - 1) / (threads - t)
		if id < dealt+n {
			return t
		}
		dealt += n
	}
	return threads - 1
}

// NewPgbenchSeeds derives the seeds as pgbench 15 does for --random-seed
// seed, clients clients and threads threads (-j; clamped as pgbench
// does). drawDefaultSeed is false when -D default_seed is given: pgbench
// then draws no :default_seed and the threads' seeds move up by one.
func NewPgbenchSeeds(seed uint64, clients, threads int, drawDefaultSeed bool) PgbenchSeeds {
	var base Rand
	base.Seed(seed)
	s := PgbenchSeeds{Clients: make([]uint64, clients)}
	for i := range s.Clients {
		s.Clients[i] = base.Uint64()
	}
	if drawDefaultSeed {
		s.DefaultSeed = int64(base.Uint64())
	}
	s.Threads = make([]ThreadSeeds, PgbenchThreads(clients, threads))
	for t := range s.Threads {
		s.Threads[t] = ThreadSeeds{Choose: base.Uint64(), Throttle: base.Uint64(), Sample: base.Uint64()}
	}
	return s
}
