// Package httpsampler reads an HTTP target's request counters on the
// run's clock: replies per second by status class, requests without a
// reply, and latency percentiles, for all requests and per endpoint
// (names in db/http/httpmetric). It reads firedrill's own counters, not
// the service, so it never waits on a frozen service.
package httpsampler

import (
	"context"
	"time"

	httptarget "github.com/firedrill/firedrill/db/http/client"
	hm "github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/sampler"
)

// Requests samples a target's request counters every tick: its
// workloads' (each has its own counters), added up by endpoint.
type Requests struct {
	stats func() []*httptarget.Stats
	prev  map[string]*reading // by endpoint; "" for all
	spare map[string]*reading // the reading before, reused
	tmp   httptarget.Snapshot
	at    time.Time
	now   func() time.Time
}

var (
	_ sampler.Sampler   = (*Requests)(nil)
	_ sampler.Momentary = (*Requests)(nil)
)

// reading is one endpoint's counters at the last read, over the
// workloads.
type reading struct {
	replies, errors int64
	status          [6]int64
	hist            httptarget.Snapshot
}

// New samples stats.
func New(stats *httptarget.Stats) *Requests {
	return NewSet(func() []*httptarget.Stats { return []*httptarget.Stats{stats} })
}

// NewSet samples the counters list returns (the target's workloads'),
// added up: two workloads' requests to one endpoint are that endpoint's.
func NewSet(list func() []*httptarget.Stats) *Requests {
	return &Requests{stats: list, prev: make(map[string]*reading),
		spare: make(map[string]*reading), now: time.Now}
}

// Name is the timeline source.
func (*Requests) Name() string { return hm.Source }

// EveryTick: latency percentiles of a tenth of a second show what a
// second's hide, and reading counters in memory costs nothing.
func (*Requests) EveryTick() bool { return true }

var quantiles = []float64{0.5, 0.99}

// Sample reports the interval since the last read; the first read only
// takes the counters' starting point.
func (r *Requests) Sample(context.Context) (map[string]float64, any, error) {
	now := r.now()
	seconds := now.Sub(r.at).Seconds()
	first := r.at.IsZero()
	r.at = now
	cur := make(map[string]*reading, len(r.prev))
	read := func(name string, ep *httptarget.Endpoint) {
		c := cur[name]
		if c == nil {
			if c = r.spare[name]; c == nil {
				c = &reading{}
			} else {
				*c = reading{}
			}
			cur[name] = c
		}
		c.replies += ep.Replies.Load()
		c.errors += ep.Errors.Load()
		for i := range c.status {
			c.status[i] += ep.Status[i].Load()
		}
		ep.Latency.Snapshot(&r.tmp)
		c.hist.Add(&r.tmp)
	}
	for _, st := range r.stats() {
		read("", &st.All)
		for _, ep := range st.Endpoints() {
			read(ep.Name, ep)
		}
	}
	values := make(map[string]float64)
	for name, c := range cur {
		prefix := ""
		if name != "" {
			prefix = name + "."
		}
		if !first && seconds > 0 {
			r.values(c, r.prev[name], prefix, values, seconds)
		}
	}
	// The readings before become the spares the next read fills.
	r.prev, r.spare = cur, r.prev
	return values, nil, nil
}

// values adds one endpoint's values, its keys prefixed by prefix.
func (r *Requests) values(cur, prev *reading, prefix string, values map[string]float64, seconds float64) {
	if prev == nil {
		prev = &reading{} // an endpoint first seen now: counted from zero
	}
	values[prefix+hm.RequestsPerS] = float64(cur.replies-prev.replies) / seconds
	values[prefix+hm.ErrorsPerS] = float64(cur.errors-prev.errors) / seconds
	for class := 1; class <= 5; class++ {
		values[prefix+hm.StatusClass(class)] = float64(cur.status[class]-prev.status[class]) / seconds
	}
	var q [2]float64
	if httptarget.Quantiles(&prev.hist, &cur.hist, quantiles, q[:]) > 0 {
		values[prefix+hm.P50MS] = q[0] / 1000
		values[prefix+hm.P99MS] = q[1] / 1000
		values[prefix+hm.MaxMS] = httptarget.MaxIn(&prev.hist, &cur.hist) / 1000
	}
}
