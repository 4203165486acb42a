package capacity

import (
	"fmt"
	"math"
	"strings"

	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// ServiceLoad is what a step measured of one service of the scenario's
// application tier (docs/services.md) in its steady part: how full its
// threads, queue, connection pool and CPU were, and which of them binds.
type ServiceLoad struct {
	Name string `json:"name"`
	// Threads are its threads over every instance (max_threads ×
	// instances); Busy the mean of those serving a request.
	Threads int     `json:"threads"`
	Busy    float64 `json:"busy_threads"`
	// Queued is the mean of the requests in the accept queues, OldestAge
	// the longest a queued request had waited (s, the window's most).
	Queued    float64 `json:"queue_length"`
	OldestAge float64 `json:"queue_oldest_age_s"`
	// PoolWaiters is the mean of the threads waiting for a pooled
	// connection, PoolSize the pool per instance and target (0: none).
	PoolWaiters float64 `json:"pool_waiters"`
	PoolSize    int     `json:"pool_size,omitempty"`
	// RunQueue is the mean of the requests waiting for a core beyond
	// the instances' Cores (each), summed over the instances; Cores 0:
	// no CPU model.
	RunQueue float64 `json:"cpu_run_queue"`
	Cores    float64 `json:"cores,omitempty"`
	// Refused is the rate of requests refused with the queue full.
	Refused float64 `json:"refused_per_s"`
	// Binds is what of the service binds ("threads", "connection pool",
	// "CPU"), "" when nothing of it was saturated.
	Binds string `json:"binds,omitempty"`
}

// What of a service binds.
const (
	ServiceThreads = "threads"
	ServicePool    = "connection pool"
	ServiceCPU     = "CPU"
)

// Thresholds of a saturated service, on the window's means: requests
// waited for a thread or a connection (half a request on average is
// one waiting half the time), or the threads were nearly all busy; and
// the share of the busy threads waiting on one resource that makes it
// the binding one (as the service-saturation rule judges its ticks).
const (
	serviceWaiting   = 0.5
	serviceBusyShare = 0.9
	serviceBindShare = 0.5
)

// ReadServices reads the series of the scenario's services over the
// measured window (those that have series: services no workload used
// have none), and judges what of each binds.
func (m *Measure) ReadServices(run *timeline.Run, services []scenario.Service) {
	if m.to <= m.from {
		return
	}
	for _, sv := range services {
		series := func(metric string) []timeline.Point {
			return run.Series(svcmetric.Source, svcmetric.Key(sv.Name, metric, ""))
		}
		busy := series(svcmetric.BusyThreads)
		if !inWindow(busy, m.from, m.to) {
			continue
		}
		l := ServiceLoad{Name: sv.Name, Threads: sv.MaxThreads * max(1, sv.Instances), PoolSize: sv.Pool.Size, Cores: sv.Cores,
			Busy:        mean(busy, m.from, m.to),
			Queued:      mean(series(svcmetric.QueueLength), m.from, m.to),
			OldestAge:   most(series(svcmetric.QueueOldestAge), m.from, m.to),
			PoolWaiters: mean(series(svcmetric.PoolWaiters), m.from, m.to),
			Refused:     mean(series(svcmetric.Refused), m.from, m.to),
		}
		for i := range max(1, sv.Instances) {
			l.RunQueue += mean(run.Series(svcmetric.Source, svcmetric.InstanceKey(sv.Name, i, svcmetric.CPURunQueue)), m.from, m.to)
		}
		l.Binds = l.judge()
		m.Services = append(m.Services, l)
	}
}

// judge says what of the service binds: nothing unless requests waited
// or its threads were nearly all busy; then the CPU when most busy
// threads waited for a core, the pool when most waited for a
// connection, else the threads themselves (busy in the database's
// transactions: more of them, or faster transactions, lift it).
func (l ServiceLoad) judge() string {
	full := l.Threads > 0 && l.Busy >= serviceBusyShare*float64(l.Threads)
	if l.Queued < serviceWaiting && l.PoolWaiters < serviceWaiting && !full && l.Refused == 0 {
		return ""
	}
	switch {
	case l.Busy > 0 && l.RunQueue >= serviceBindShare*l.Busy:
		return ServiceCPU
	case l.Busy > 0 && l.PoolWaiters >= serviceBindShare*l.Busy:
		return ServicePool
	}
	return ServiceThreads
}

// Text is the service's load in words, with what binds first.
func (l ServiceLoad) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "service %s: ", l.Name)
	switch l.Binds {
	case "":
		b.WriteString("not saturated; ")
	case ServiceThreads:
		b.WriteString("its threads bind, busy in the database's transactions; ")
	default:
		fmt.Fprintf(&b, "its %s binds; ", l.Binds)
	}
	fmt.Fprintf(&b, "%.1f of %d threads busy, %.1f queued for a thread", l.Busy, l.Threads, l.Queued)
	if l.OldestAge > 0 {
		fmt.Fprintf(&b, " (the oldest %s)", ms(1e6*l.OldestAge))
	}
	if l.PoolWaiters > 0 {
		fmt.Fprintf(&b, ", %.1f waiting for one of the pool's %d connections", l.PoolWaiters, l.PoolSize)
	}
	if l.Cores > 0 {
		fmt.Fprintf(&b, ", %.1f waiting for a core (%s each)", l.RunQueue, cores(l.Cores))
	}
	if l.Refused > 0 {
		fmt.Fprintf(&b, ", %.1f/s refused with the queue full", l.Refused)
	}
	return b.String()
}

// inWindow says whether any point lies in from < T <= to.
func inWindow(pts []timeline.Point, from, to float64) bool {
	for _, p := range pts {
		if p.T > from && p.T <= to+1e-6 {
			return true
		}
	}
	return false
}

// most is the largest value of the points with from < T <= to, 0
// without any.
func most(pts []timeline.Point, from, to float64) float64 {
	out := 0.0
	for _, p := range pts {
		if p.T > from && p.T <= to+1e-6 {
			out = math.Max(out, p.V)
		}
	}
	return out
}
