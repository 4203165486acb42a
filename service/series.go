package service

import (
	"context"
	"sync"
	"time"

	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/service/svcmetric"
)

// Set is the services of one run: it builds each once, and reads their
// series as one sampler of the source "service".
type Set struct {
	services []*Service

	mu   sync.Mutex
	prev map[*Service]reading
}

// reading is a service's cumulative counters at a moment.
type reading struct {
	at                                                                 time.Time
	arrivals, left, good, timeouts, wasted, cancelled, failed, refused int64
	attempts, retries, admitted, throttled                             int64
	timeUS                                                             int64
	area                                                               float64
	breakerRej, bulkheadRej                                            map[string]int64
}

// NewSet builds the scenario's services.
func NewSet(cfgs []scenario.Service) *Set {
	set := &Set{prev: map[*Service]reading{}}
	for _, c := range cfgs {
		set.services = append(set.services, New(c))
	}
	return set
}

// Service returns the service of that name, or nil.
func (set *Set) Service(name string) *Service {
	for _, s := range set.services {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

// Name is the sampler's source.
func (set *Set) Name() string { return svcmetric.Source }

// Sample reads every service's series: rates over the time since the
// previous reading (none on the first), levels now.
func (set *Set) Sample(ctx context.Context) (map[string]float64, any, error) {
	return set.SampleAt(time.Now()), nil, nil
}

// SampleAt is Sample on a clock of the caller's: rates are over the
// time between the moments given, so that the series times their ticks
// add up to the counts exactly (the runner gives its tick's time, the
// one the samples are recorded at).
func (set *Set) SampleAt(now time.Time) map[string]float64 {
	set.mu.Lock()
	defer set.mu.Unlock()
	v := map[string]float64{}
	for _, s := range set.services {
		cur := s.read(now)
		if prev, ok := set.prev[s]; ok {
			s.rates(v, prev, cur)
		}
		set.prev[s] = cur
		s.levels(v, time.Now())
	}
	return v
}

func (s *Service) read(now time.Time) reading {
	c := &s.c
	r := reading{at: now, arrivals: c.arrivals.Load(), left: c.left.Load(), good: c.good.Load(),
		timeouts: c.timeouts.Load(), wasted: c.wasted.Load(), cancelled: c.cancelled.Load(), failed: c.failed.Load(),
		refused: c.refused.Load(), attempts: c.attempts.Load(), retries: c.retries.Load(),
		admitted: c.admitted.Load(), throttled: c.throttled.Load(), timeUS: c.timeInService.Load(),
		breakerRej: map[string]int64{}, bulkheadRej: map[string]int64{}}
	s.lmu.Lock()
	s.advanceArea(time.Now())
	r.area = s.area
	s.lmu.Unlock()
	for _, p := range s.parts() {
		r.breakerRej[p.name] = p.breakerRejected.Load()
		r.bulkheadRej[p.name] = p.bulkheadRejected.Load()
	}
	return r
}

func (s *Service) parts() []*targetParts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*targetParts, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, s.targets[name])
	}
	return out
}

func (s *Service) rates(v map[string]float64, a, b reading) {
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return
	}
	name := s.cfg.Name
	rate := func(metric string, x, y int64) { v[svcmetric.Key(name, metric, "")] = float64(y-x) / secs }
	rate(svcmetric.Arrivals, a.arrivals, b.arrivals)
	rate(svcmetric.Throughput, a.left, b.left)
	rate(svcmetric.Goodput, a.good, b.good)
	rate(svcmetric.Refused, a.refused, b.refused)
	rate(svcmetric.Timeouts, a.timeouts, b.timeouts)
	rate(svcmetric.Wasted, a.wasted, b.wasted)
	rate(svcmetric.Cancelled, a.cancelled, b.cancelled)
	rate(svcmetric.Failed, a.failed, b.failed)
	rate(svcmetric.Retries, a.retries, b.retries)
	if s.throttle != nil {
		rate(svcmetric.ThrottleAdmitted, a.admitted, b.admitted)
		rate(svcmetric.ThrottleRejected, a.throttled, b.throttled)
	}
	if served := b.arrivals - a.arrivals; served > 0 {
		// Attempts on the database per request that got a thread.
		if calls := b.left - a.left; calls > 0 && b.attempts > a.attempts {
			v[svcmetric.Key(name, svcmetric.Amplification, "")] = float64(b.attempts-a.attempts) / float64(calls)
		}
	}
	v[svcmetric.Key(name, svcmetric.InSystem, "")] = (b.area - a.area) / secs
	if n := b.left - a.left; n > 0 {
		v[svcmetric.Key(name, svcmetric.ResponseTime, "")] = float64(b.timeUS-a.timeUS) / 1e6 / float64(n)
	}
	for _, p := range s.parts() {
		if p.breaker != nil {
			v[svcmetric.Key(name, svcmetric.BreakerRejected, p.name)] = float64(b.breakerRej[p.name]-a.breakerRej[p.name]) / secs
		}
		if p.bulkheads != nil {
			v[svcmetric.Key(name, svcmetric.BulkheadRejected, p.name)] = float64(b.bulkheadRej[p.name]-a.bulkheadRej[p.name]) / secs
		}
	}
}

func (s *Service) levels(v map[string]float64, now time.Time) {
	name := s.cfg.Name
	var queued, busy, waiters float64
	oldest := 0.0
	parts := s.parts()
	for i, in := range s.instances {
		in.mu.Lock()
		q := float64(len(in.queue))
		b := float64(s.cfg.MaxThreads - in.free)
		if len(in.queue) > 0 {
			oldest = max(oldest, now.Sub(in.queue[0].due).Seconds())
		}
		in.mu.Unlock()
		w := 0.0
		for _, p := range parts {
			w += float64(p.pools[i].waiters.Load())
		}
		v[svcmetric.InstanceKey(name, i, svcmetric.QueueLength)] = q
		v[svcmetric.InstanceKey(name, i, svcmetric.BusyThreads)] = b
		v[svcmetric.InstanceKey(name, i, svcmetric.PoolWaiters)] = w
		if in.cpu != nil {
			v[svcmetric.InstanceKey(name, i, svcmetric.CPURunQueue)] = max(0, float64(in.cpu.running())-s.cfg.Cores)
		}
		queued += q
		busy += b
		waiters += w
	}
	v[svcmetric.Key(name, svcmetric.QueueLength, "")] = queued
	v[svcmetric.Key(name, svcmetric.QueueOldestAge, "")] = oldest
	v[svcmetric.Key(name, svcmetric.BusyThreads, "")] = busy
	v[svcmetric.Key(name, svcmetric.PoolWaiters, "")] = waiters
	for _, p := range parts {
		if p.breaker != nil {
			v[svcmetric.Key(name, svcmetric.BreakerState, p.name)] = float64(p.breaker.stateNow())
		}
	}
	if s.throttle != nil {
		v[svcmetric.Key(name, svcmetric.ThrottleLag, "")] = s.throttle.lag(now).Seconds()
	}
}
