// Package sampler defines what reads one source of database or host
// internals on each tick of a run. Implementations live in subpackages, one
// per kind of target (db/postgres/sampler, sampler/host), one file per source;
// every value key they emit is listed in README.md, the contract the
// diagnosis rules are written against.
package sampler

import (
	"context"
	"time"
)

// Sampler reads one source of database or host internals on each tick.
type Sampler interface {
	// Name is the timeline Source name, e.g. "pg_stat_slru".
	Name() string
	// Sample reads the source once. values are numeric series (the sampler
	// turns cumulative counters into per-second rates or per-interval
	// deltas itself, keeping the previous reading; the first tick may omit
	// rate values); detail is any JSON-marshalable value for non-numeric
	// facts (or nil).
	Sample(ctx context.Context) (values map[string]float64, detail any, err error)
}

// Noter is implemented by a sampler that cannot read all of its source on
// this target; Note says what is missing and why, for the run's manifest
// (timeline.SamplerInfo.Notes). "" means nothing is missing.
type Noter interface {
	Note() string
}

// Closer is implemented by a sampler that holds resources (a connection)
// to release when the run ends.
type Closer interface {
	Close() error
}

// Counters keeps the previous reading of cumulative counters, so that a
// sampler can report what happened between two readings: per-interval
// deltas and per-second rates. The zero value is ready to use.
type Counters struct {
	prev   map[string]float64
	prevAt time.Time
}

// Next records a reading of counters taken at the moment at and returns the
// change since the previous reading. Counters absent from reading are
// forgotten.
func (c *Counters) Next(at time.Time, reading map[string]float64) Interval {
	iv := Interval{prev: c.prev, cur: reading}
	if c.prev != nil {
		iv.Seconds = at.Sub(c.prevAt).Seconds()
	}
	c.prev, c.prevAt = reading, at
	return iv
}

// Interval is the change of counters between two readings.
type Interval struct {
	// Seconds is the time between the readings; 0 after the first one.
	Seconds   float64
	prev, cur map[string]float64
}

// Delta is how much a counter grew in the interval. ok is false on the
// first reading, for a counter that was not in the previous reading, and
// when the counter went down (a statistics reset or a crash restart), since
// then nothing is known about the interval.
func (iv Interval) Delta(name string) (delta float64, ok bool) {
	if iv.Seconds <= 0 {
		return 0, false
	}
	before, hadBefore := iv.prev[name]
	now, hasNow := iv.cur[name]
	if !hadBefore || !hasNow || now < before {
		return 0, false
	}
	return now - before, true
}

// Rate is a counter's growth per second over the interval; ok as for Delta.
func (iv Interval) Rate(name string) (rate float64, ok bool) {
	delta, ok := iv.Delta(name)
	if !ok {
		return 0, false
	}
	return delta / iv.Seconds, true
}
