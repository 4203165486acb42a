// Package service models the application tier between a workload's
// callers and the database: instances of a thread pool with an accept
// queue, the callers' timeout, CPU shared by the running threads, a
// connection pool, retries, a circuit breaker, a bulkhead and a throttle
// (docs/services.md). It runs in real time: a request that gets through
// runs its workload's transaction on the real database, through the
// engine (engine.Gate). It names no kind of database.
package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/scenario"
)

// The codes a request the tier failed itself is counted under, beside
// the database's (the engine's error counts, by code).
const (
	CodeRefused     = "service-refused"   // the accept queue was full
	CodeThrottled   = "service-throttled" // the throttle had no token
	CodeTimeout     = "service-timeout"   // dropped after its caller gave up (cancel_on_timeout)
	CodeBreakerOpen = "breaker-open"      // the target's circuit breaker refused the call
	CodeBulkhead    = "bulkhead-full"     // the target's bulkhead refused the call
)

// Service is one service of a run: what every workload naming it shares.
type Service struct {
	cfg       scenario.Service
	instances []*instance
	next      atomic.Uint64 // round robin over the instances
	throttle  *throttle
	budget    *retryBudget

	mu      sync.Mutex
	targets map[string]*targetParts
	order   []string // targets in the order first asked for

	c counters

	reqs sync.Pool // of *request: serving one allocates nothing

	// observe, if set (tests), is told of each request that got a
	// thread: when it entered, got its thread, and gave it back.
	observe func(entered, started, freed time.Time)

	// Little's law: requests in the service and the time integral of
	// that number, and the time of requests that left.
	lmu      sync.Mutex
	inSystem int
	area     float64 // request-seconds
	lastAt   time.Time
}

// counters are cumulative since the start; the series are their rates.
type counters struct {
	arrivals, left, good, timeouts, wasted, cancelled, failed, refused atomic.Int64
	attempts, retries, budgetOut, admitted, throttled, poolTimeouts    atomic.Int64
	timeInService                                                      atomic.Int64 // µs, of the requests that left
}

type instance struct {
	mu    sync.Mutex
	free  int        // idle threads
	queue []*request // waiting, oldest first
	cpu   *cpu       // nil: no CPU model
}

// targetParts are what the service keeps per target: its breaker, and
// per instance its bulkhead and pool.
type targetParts struct {
	name      string
	breaker   *breaker
	bulkheads []*semaphore
	pools     []*semaphore

	breakerRejected, bulkheadRejected atomic.Int64
}

// Request states (request.state): the caller waits, gave up, or got the
// response.
const (
	waiting int32 = iota
	gaveUp
	answered
)

type request struct {
	due     time.Time
	entered time.Time // when the caller handed it to the service
	started time.Time // when it got a thread
	handed  bool      // a thread took it from the queue (under the instance's mu)
	state   atomic.Int32
	caller  engine.GateCall // woken when a thread takes it
	job     cpuJob          // its CPU phase
	wait    semWaiter       // its wait for a bulkhead's or pool's slot
}

// parker is how the model waits: the engine's GateCall (Park, Wake),
// which on an event loop parks the client's coroutine rather than
// blocking the loop's thread.
type parker interface {
	Park(ctx context.Context, deadline time.Time) bool
	Wake()
}

// New returns the service cfg describes (defaults filled by the
// scenario's loader).
func New(cfg scenario.Service) *Service {
	s := &Service{cfg: cfg, targets: map[string]*targetParts{}}
	for range cfg.Instances {
		in := &instance{free: cfg.MaxThreads}
		if cfg.Cores > 0 && cfg.CPUPerRequest > 0 {
			in.cpu = newCPU(cfg.Cores)
		}
		s.instances = append(s.instances, in)
	}
	if cfg.Throttle != nil {
		s.throttle = newThrottle(*cfg.Throttle)
	}
	if cfg.Retry != nil && cfg.Retry.Budget > 0 {
		s.budget = &retryBudget{ratio: cfg.Retry.Budget}
	}
	return s
}

// Name is the service's name.
func (s *Service) Name() string { return s.cfg.Name }

// Callers is how many callers (engine clients) a workload through the
// service needs so that every request the service can hold has one:
// each instance's threads and queue.
func (s *Service) Callers() int {
	return s.cfg.Instances * (s.cfg.MaxThreads + s.cfg.AcceptCount)
}

// Connections is how many database connections a workload through the
// service may hold on its target: a pool per instance.
func (s *Service) Connections() int { return s.cfg.Instances * s.cfg.Pool.Size }

// Gate is the service in front of one target (its name: the series key
// of its breaker and bulkhead), for the engine's Config.Gate.
func (s *Service) Gate(target string) engine.Gate {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.targets[target]
	if p == nil {
		p = &targetParts{name: target}
		if s.cfg.Breaker != nil {
			p.breaker = newBreaker(*s.cfg.Breaker)
		}
		for range s.cfg.Instances {
			if s.cfg.Bulkhead != nil {
				p.bulkheads = append(p.bulkheads, newSemaphore(s.cfg.Bulkhead.MaxConcurrentCalls))
			}
			p.pools = append(p.pools, newSemaphore(s.cfg.Pool.Size))
		}
		s.targets[target] = p
		s.order = append(s.order, target)
	}
	return &gate{s: s, p: p}
}

type gate struct {
	s *Service
	p *targetParts
}

var _ engine.Gate = (*gate)(nil)

// enter counts a request in the service from due.
func (s *Service) enter(due, now time.Time) {
	s.lmu.Lock()
	s.advanceArea(now)
	s.inSystem++
	s.area += max(0, now.Sub(due).Seconds())
	s.lmu.Unlock()
}

// leave counts a request out of the service.
func (s *Service) leave(due, now time.Time) {
	s.lmu.Lock()
	s.advanceArea(now)
	s.inSystem--
	s.lmu.Unlock()
	s.c.left.Add(1)
	s.c.timeInService.Add(int64(max(0, now.Sub(due)) / time.Microsecond))
}

func (s *Service) advanceArea(now time.Time) {
	if !s.lastAt.IsZero() && now.After(s.lastAt) {
		s.area += float64(s.inSystem) * now.Sub(s.lastAt).Seconds()
	}
	if now.After(s.lastAt) {
		s.lastAt = now
	}
}

func (g *gate) Serve(ctx context.Context, due time.Time, call engine.GateCall) {
	s := g.s
	cfg := &s.cfg
	s.c.arrivals.Add(1)
	if s.throttle != nil {
		if !s.throttle.admit(time.Now()) {
			s.c.throttled.Add(1)
			call.Refuse(CodeThrottled, errors.New("throttled: no token in the bucket"))
			return
		}
		s.c.admitted.Add(1)
	}
	idx := int(s.next.Add(1)-1) % len(s.instances)
	in := s.instances[idx]
	req, _ := s.reqs.Get().(*request)
	if req == nil {
		req = new(request)
	}
	req.due, req.started, req.handed, req.caller = due, time.Time{}, false, call
	req.state.Store(waiting)
	// Take a thread, or wait in the accept queue. The request enters at
	// the time read under the lock, so that the queue's order is that of
	// the times.
	in.mu.Lock()
	now := time.Now()
	req.entered = now
	queued := false
	switch {
	case in.free > 0:
		in.free--
		req.started = now
	case len(in.queue) < cfg.AcceptCount:
		in.queue = append(in.queue, req)
		queued = true
	default:
		in.mu.Unlock()
		s.reqs.Put(req)
		s.c.refused.Add(1)
		call.Refuse(CodeRefused, fmt.Errorf("refused: the accept queue is full (%d)", cfg.AcceptCount))
		return
	}
	in.mu.Unlock()
	s.enter(due, now)
	if cfg.Timeout > 0 {
		// The caller gives up at its time even while the request is in
		// the database. A request whose timer fired may still be in the
		// timer's hands: it is not reused.
		t := time.AfterFunc(due.Add(cfg.Timeout).Sub(now), func() { s.giveUp(req) })
		defer func() {
			if t.Stop() {
				s.reqs.Put(req)
			}
		}()
	} else {
		defer s.reqs.Put(req)
	}
	if queued && !g.await(ctx, in, req, call) {
		return
	}
	out := g.work(ctx, idx, in, req, call)
	end := g.release(in)
	s.expired(req, end) // the timer may not have fired yet on a loaded machine
	if s.observe != nil && out != stopped && out != dropped {
		s.observe(req.entered, req.started, end)
	}
	switch {
	case req.state.CompareAndSwap(waiting, answered):
		if out == served {
			s.c.good.Add(1)
		}
	case out != dropped && out != stopped:
		s.c.wasted.Add(1) // finished for a caller who had gone (not cut by the run's end)
	}
	if out == failed {
		s.c.failed.Add(1)
	}
	s.leave(due, end)
}

// giveUp is the caller giving up on req: counted once (a request
// parked in the queue under cancel_on_timeout wakes at the same time by
// its own deadline).
func (s *Service) giveUp(req *request) {
	if req.state.CompareAndSwap(waiting, gaveUp) {
		s.c.timeouts.Add(1)
	}
}

// expired says whether req's caller has given up by now, giving up for
// it if its timeout has passed (the timer may be late).
func (s *Service) expired(req *request, now time.Time) bool {
	if s.cfg.Timeout <= 0 {
		return false
	}
	if !now.Before(req.due.Add(s.cfg.Timeout)) {
		s.giveUp(req)
	}
	return req.state.Load() == gaveUp
}

// await waits in the queue for a thread; false if the request left
// instead (the run ended, or its caller gave up under cancel_on_timeout).
func (g *gate) await(ctx context.Context, in *instance, req *request, call engine.GateCall) bool {
	s := g.s
	var deadline time.Time
	if s.cfg.CancelOnTimeout && s.cfg.Timeout > 0 {
		deadline = req.due.Add(s.cfg.Timeout)
	}
	for call.Park(ctx, deadline) {
		in.mu.Lock()
		handed := req.handed
		in.mu.Unlock()
		if handed {
			return true
		}
		if s.cfg.CancelOnTimeout && s.expired(req, time.Now()) {
			break
		}
	}
	in.mu.Lock()
	if req.handed { // a thread took it meanwhile: serve it
		in.mu.Unlock()
		if ctx.Err() != nil {
			g.release(in)
			s.leave(req.due, time.Now())
			return false
		}
		return true
	}
	for i, q := range in.queue {
		if q == req {
			in.queue = append(in.queue[:i], in.queue[i+1:]...)
			break
		}
	}
	in.mu.Unlock()
	s.leave(req.due, time.Now())
	if ctx.Err() == nil && req.state.Load() == gaveUp { // not the run's end
		s.c.cancelled.Add(1)
		call.Refuse(CodeTimeout, errors.New("dropped from the queue: the caller gave up"))
	}
	return false
}

// release gives the thread to the next queued request, or back to the
// idle ones; it returns the time it did (the one request's end, the
// other's start).
func (g *gate) release(in *instance) time.Time {
	in.mu.Lock()
	defer in.mu.Unlock()
	now := time.Now()
	if n := len(in.queue); n > 0 {
		var next *request
		if g.s.cfg.LIFO {
			next = in.queue[n-1]
			in.queue[n-1] = nil
			in.queue = in.queue[:n-1]
		} else {
			next = in.queue[0]
			copy(in.queue, in.queue[1:])
			in.queue[n-1] = nil
			in.queue = in.queue[:n-1]
		}
		next.handed = true
		next.started = now
		next.caller.Wake()
		return now
	}
	in.free++
	return now
}

// How a request that got a thread ended.
type outcome int

const (
	served  outcome = iota // its transaction succeeded
	failed                 // every attempt failed
	dropped                // its caller had gone (cancel_on_timeout)
	stopped                // the run ended under it
)

// work serves a request on a thread: its CPU, then its attempts.
func (g *gate) work(ctx context.Context, idx int, in *instance, req *request, call engine.GateCall) outcome {
	s := g.s
	cfg := &s.cfg
	if cfg.CancelOnTimeout && cfg.Timeout > 0 {
		if s.expired(req, time.Now()) {
			s.c.cancelled.Add(1)
			call.Refuse(CodeTimeout, errors.New("dropped: the caller gave up"))
			return dropped
		}
	}
	if in.cpu != nil && !in.cpu.use(ctx, cfg.CPUPerRequest, &req.job, call) {
		return stopped
	}
	if s.budget != nil {
		s.budget.call(time.Now())
	}
	for attempt := 1; ; attempt++ {
		if cfg.CancelOnTimeout && s.expired(req, time.Now()) {
			s.c.cancelled.Add(1)
			call.Refuse(CodeTimeout, errors.New("dropped: the caller gave up"))
			return dropped
		}
		ok, stop := g.attempt(ctx, idx, req, call)
		if stop {
			return stopped
		}
		if ok {
			return served
		}
		r := cfg.Retry
		if r == nil || attempt >= r.MaxAttempts {
			return failed
		}
		if s.budget != nil && !s.budget.spend(time.Now()) {
			s.c.budgetOut.Add(1)
			return failed
		}
		s.c.retries.Add(1)
		wait := float64(r.Wait)
		for range attempt - 1 {
			wait *= r.Multiplier
		}
		if !sleep(ctx, call, time.Duration(wait)) {
			return stopped
		}
	}
}

// attempt makes one call: through the breaker and bulkhead of the
// target, with a connection of the instance's pool.
func (g *gate) attempt(ctx context.Context, idx int, req *request, call engine.GateCall) (ok, stop bool) {
	s, p := g.s, g.p
	var now time.Time // for the breaker's slow calls
	if p.breaker != nil {
		now = time.Now()
	}
	s.c.attempts.Add(1)
	if p.breaker != nil && !p.breaker.allow(now) {
		p.breakerRejected.Add(1)
		call.Refuse(CodeBreakerOpen, fmt.Errorf("the circuit breaker of %s is open", p.name))
		return false, false
	}
	if p.bulkheads != nil {
		bh := p.bulkheads[idx]
		if !bh.acquire(ctx, s.cfg.Bulkhead.MaxWait, &req.wait, call) {
			if ctx.Err() != nil {
				return false, true
			}
			p.bulkheadRejected.Add(1)
			call.Refuse(CodeBulkhead, fmt.Errorf("the bulkhead of %s is full (%d calls)", p.name, s.cfg.Bulkhead.MaxConcurrentCalls))
			if p.breaker != nil {
				p.breaker.record(time.Now(), true, time.Since(now))
			}
			return false, false
		}
		defer bh.release()
	}
	pool := p.pools[idx]
	if !pool.acquire(ctx, s.cfg.Pool.ConnectionTimeout, &req.wait, call) {
		if ctx.Err() != nil {
			return false, true
		}
		s.c.poolTimeouts.Add(1)
		call.Refuse(engine.CodePoolTimeout, fmt.Errorf("connection is not available, request timed out after %v (pool of %d)",
			s.cfg.Pool.ConnectionTimeout, s.cfg.Pool.Size))
		if p.breaker != nil {
			p.breaker.record(time.Now(), true, time.Since(now))
		}
		return false, false
	}
	ok, stop = call.Attempt(ctx)
	pool.release()
	if p.breaker != nil && !stop {
		p.breaker.record(time.Now(), !ok, time.Since(now))
	}
	return ok, stop
}

// sleep parks the caller for d; false if the run stopped.
func sleep(ctx context.Context, caller parker, d time.Duration) bool {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		if !caller.Park(ctx, until) {
			return false
		}
	}
	return ctx.Err() == nil
}
