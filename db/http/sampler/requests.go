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

// Requests samples a target's request counters every tick.
type Requests struct {
	stats *httptarget.Stats
	prev  map[*httptarget.Endpoint]*reading
	spare map[*httptarget.Endpoint]*reading // the reading before, reused
	at    time.Time
	now   func() time.Time
}

var (
	_ sampler.Sampler   = (*Requests)(nil)
	_ sampler.Momentary = (*Requests)(nil)
)

// reading is one endpoint's counters at the last read.
type reading struct {
	replies, errors int64
	status          [6]int64
	hist            httptarget.Snapshot
}

// New samples stats.
func New(stats *httptarget.Stats) *Requests {
	return &Requests{stats: stats, prev: make(map[*httptarget.Endpoint]*reading),
		spare: make(map[*httptarget.Endpoint]*reading), now: time.Now}
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
	values := make(map[string]float64)
	r.endpoint(&r.stats.All, "", values, seconds, first)
	for _, ep := range r.stats.Endpoints() {
		r.endpoint(ep, ep.Name+".", values, seconds, first)
	}
	return values, nil, nil
}

// endpoint adds one endpoint's values, its keys prefixed by prefix.
func (r *Requests) endpoint(ep *httptarget.Endpoint, prefix string, values map[string]float64, seconds float64, first bool) {
	cur := r.spare[ep]
	if cur == nil {
		cur = &reading{}
	}
	cur.replies, cur.errors = ep.Replies.Load(), ep.Errors.Load()
	for i := range cur.status {
		cur.status[i] = ep.Status[i].Load()
	}
	ep.Latency.Snapshot(&cur.hist)
	prev := r.prev[ep]
	r.prev[ep], r.spare[ep] = cur, prev
	if first || seconds <= 0 {
		return
	}
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
