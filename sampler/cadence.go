package sampler

import "time"

// Momentary is implemented by a sampler of what happens in a moment
// (sessions and their waits, blocking, the host's CPU), which the runner
// reads on every tick of a run, down to 100 ms. Every other sampler reads
// cumulative counters or slow-moving states and is read at most once per
// SlowPeriod: at 100 ms such sources would cost the server as much as all
// the rest, and a per-second rate of a counter says nothing a
// tenth-of-a-second one would (Performance Insights samples sessions every
// second and counters every minute).
type Momentary interface {
	// EveryTick says whether the source is read on every tick.
	EveryTick() bool
}

// SlowPeriod is how often the sources that are not read on every tick are
// read (and at the start and the end of a run).
const SlowPeriod = time.Second

// Source is one sampler with its cadence, as a run reads it.
type Source struct {
	Sampler
	// EveryTick sources are read on every tick, down to 100 ms (what
	// happens in a moment: sessions, waits, locks); the others are
	// counters read at most once per SlowPeriod.
	EveryTick bool
	// Server sources query the database (a frozen server leaves them
	// unanswered), rather than the host or firedrill itself.
	Server bool
}

// Schedule gives a target's samplers their cadence, the one decision every
// kind shares: server are the samplers that query the database, host those
// of the machine and of firedrill itself (sampler/host); each is read on
// every tick when it says so (Momentary), else once per SlowPeriod. The
// order is kept, the server's first.
func Schedule(server, host []Sampler) []Source {
	sources := make([]Source, 0, len(server)+len(host))
	for _, smp := range server {
		sources = append(sources, Source{Sampler: smp, EveryTick: everyTick(smp), Server: true})
	}
	for _, smp := range host {
		sources = append(sources, Source{Sampler: smp, EveryTick: everyTick(smp)})
	}
	return sources
}

func everyTick(smp Sampler) bool {
	m, ok := smp.(Momentary)
	return ok && m.EveryTick()
}

// Due says whether the source is to be read at now, on a clock ticking
// every interval, when it was last read at last (zero: never). A slow
// source gets half a tick of slack, so that a tick arriving a little early
// still reads it once per SlowPeriod.
func (s Source) Due(now, last time.Time, interval time.Duration) bool {
	return s.EveryTick || last.IsZero() || now.Sub(last) >= SlowPeriod-interval/2
}

// Timeout bounds each read of a sampler on a clock ticking every interval:
// most of a tick, so that a tick's reads are over before the next one, but
// no less than 100 ms (a query's round trip) nor more than 2 s (a server
// that takes longer is not answering).
func Timeout(interval time.Duration) time.Duration {
	return min(max(interval*8/10, 100*time.Millisecond), 2*time.Second)
}
