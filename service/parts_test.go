package service

import (
	"context"
	"testing"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

func defaultBreaker() scenario.ServiceBreaker {
	return scenario.ServiceBreaker{FailureRateThreshold: 50, SlowCallRateThreshold: 100, SlowCallDuration: time.Minute,
		SlidingWindowSize: 100, MinimumNumberOfCalls: 100, WaitInOpen: time.Minute, PermittedCallsInHalfOpen: 10}
}

// The breaker follows Resilience4j's state machine with its defaults.
func TestBreaker(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	b := newBreaker(defaultBreaker())
	// 99 failures: under minimumNumberOfCalls, still closed.
	for range 99 {
		if !b.allow(t0) {
			t.Fatal("closed breaker refused a call")
		}
		b.record(t0, true, time.Millisecond)
	}
	if b.stateNow() != closed {
		t.Fatalf("opened before minimumNumberOfCalls")
	}
	b.record(t0, true, time.Millisecond) // the 100th: 100 % ≥ 50 %
	if b.stateNow() != open {
		t.Fatalf("state %d after 100 failures, want open", b.stateNow())
	}
	if b.allow(t0.Add(59 * time.Second)) {
		t.Error("open breaker let a call through before waitDurationInOpenState")
	}
	// After the wait the next call moves it to half-open; 10 are permitted.
	t1 := t0.Add(61 * time.Second)
	for i := range 10 {
		if !b.allow(t1) {
			t.Fatalf("half-open breaker refused permitted call %d", i+1)
		}
	}
	if b.allow(t1) {
		t.Error("half-open breaker let an 11th call through")
	}
	if b.stateNow() != halfOpen {
		t.Fatalf("state %d, want half-open", b.stateNow())
	}
	// 5 of 10 trial calls fail: 50 % ≥ threshold → open again.
	for i := range 10 {
		b.record(t1, i < 5, time.Millisecond)
	}
	if b.stateNow() != open {
		t.Fatalf("state %d after 50 %% failed trials, want open", b.stateNow())
	}
	// Next trial: 4 of 10 fail → closed, with a fresh window.
	t2 := t1.Add(61 * time.Second)
	for range 10 {
		b.allow(t2)
	}
	for i := range 10 {
		b.record(t2, i < 4, time.Millisecond)
	}
	if b.stateNow() != closed {
		t.Fatalf("state %d after 40 %% failed trials, want closed", b.stateNow())
	}
	// Slow calls count too: 100 calls over the slow threshold open it
	// (slowCallRateThreshold 100 %).
	for range 100 {
		b.record(t2, false, 2*time.Minute)
	}
	if b.stateNow() != open {
		t.Errorf("state %d after 100 slow calls, want open", b.stateNow())
	}
	// A window of 49 failures in 100 calls stays closed.
	c := newBreaker(defaultBreaker())
	for i := range 100 {
		c.record(t0, i%100 < 49, time.Millisecond)
	}
	if c.stateNow() != closed {
		t.Errorf("opened at a 49 %% failure rate")
	}
}

// A local throttle admits its burst then its rate; a remote one admits
// everything until the first admissions reach it, lag later.
func TestThrottle(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	count := func(th *throttle, from time.Time, n int, every time.Duration) int {
		admitted := 0
		for i := range n {
			if th.admit(from.Add(time.Duration(i) * every)) {
				admitted++
			}
		}
		return admitted
	}
	// 1,000 requests over 1 s into a bucket of 100 at 100/s: ~200 in.
	local := newThrottle(scenario.ServiceThrottle{Rate: 100, Burst: 100})
	if got := count(local, t0, 1000, time.Millisecond); got < 195 || got > 202 {
		t.Errorf("local: %d admitted of 1,000 in 1 s, want about 200", got)
	}
	remote := newThrottle(scenario.ServiceThrottle{Rate: 100, Burst: 100, Remote: true, Lag: 2 * time.Second})
	if got := count(remote, t0, 1000, time.Millisecond); got != 1000 {
		t.Errorf("remote with a 2 s lag: %d admitted of 1,000 in 1 s, want all", got)
	}
	if lag := remote.lag(t0.Add(1500 * time.Millisecond)); lag != 1500*time.Millisecond {
		t.Errorf("remote lag: %v, want 1.5s (the oldest admission not yet seen)", lag)
	}
	// Once the admissions arrive the bucket is in debt: nothing passes.
	if got := count(remote, t0.Add(3*time.Second), 100, time.Millisecond); got != 0 {
		t.Errorf("remote after the lag: %d admitted, want 0 (in debt)", got)
	}
}

// The CPU is shared: n requests needing 20 ms on 1 core take about
// n × 20 ms together, each finishing near the end.
func TestCPUProcessorSharing(t *testing.T) {
	t.Parallel()
	c := newCPU(1)
	const n = 5
	need := 40 * time.Millisecond
	start := time.Now()
	done := make(chan time.Duration, n)
	for range n {
		go func() {
			c.use(context.Background(), need, new(cpuJob), newChanParker())
			done <- time.Since(start)
		}()
	}
	var first time.Duration
	for i := range n {
		d := <-done
		if i == 0 {
			first = d
		}
	}
	total := time.Since(start)
	// Processor sharing: everyone finishes near n × need (not one at
	// need, as with one request at a time); lenient bounds for a loaded
	// machine.
	if total < n*need || total > 3*n*need {
		t.Errorf("%d requests of %v on 1 core took %v, want about %v", n, need, total, n*need)
	}
	if first < (n-1)*need {
		t.Errorf("first finished after %v: not shared (want near %v)", first, n*need)
	}
	// Two cores, two requests: no slowdown.
	c2 := newCPU(2)
	start = time.Now()
	ch := make(chan struct{}, 2)
	for range 2 {
		go func() { c2.use(context.Background(), need, new(cpuJob), newChanParker()); ch <- struct{}{} }()
	}
	<-ch
	<-ch
	if d := time.Since(start); d > 3*need {
		t.Errorf("2 requests on 2 cores took %v, want about %v", d, need)
	}
}

// The retry budget allows retries up to its share of the calls.
func TestRetryBudget(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	b := &retryBudget{ratio: 0.2}
	for range 100 {
		b.call(t0)
	}
	n := 0
	for b.spend(t0) {
		n++
	}
	if n != 20 {
		t.Errorf("%d retries allowed for 100 calls at 0.2, want 20", n)
	}
	// 10 s later the window has moved on: no calls, no retries.
	if b.spend(t0.Add(11 * time.Second)) {
		t.Error("a retry allowed with no calls in the window")
	}
}

// chanParker is a parker for a goroutine of its own, as the engine's
// client without an event loop.
type chanParker struct{ woken chan struct{} }

func newChanParker() chanParker { return chanParker{make(chan struct{}, 1)} }

func (p chanParker) Park(ctx context.Context, deadline time.Time) bool {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-p.woken:
	case <-timeout:
	case <-ctx.Done():
	}
	return ctx.Err() == nil
}

func (p chanParker) Wake() {
	select {
	case p.woken <- struct{}{}:
	default:
	}
}

// A semaphore hands a released slot to the first waiting, and a wait
// ends at its time.
func TestSemaphoreHandsOffInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSemaphore(1)
	if !s.acquire(ctx, 0, new(semWaiter), newChanParker()) {
		t.Fatal("a free slot was not taken")
	}
	if s.acquire(ctx, 0, new(semWaiter), newChanParker()) {
		t.Fatal("a full semaphore gave a slot without waiting")
	}
	start := time.Now()
	if s.acquire(ctx, 30*time.Millisecond, new(semWaiter), newChanParker()) {
		t.Fatal("a full semaphore gave a slot after a wait")
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("the wait ended after %v, before its 30ms", d)
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			if s.acquire(ctx, time.Minute, new(semWaiter), newChanParker()) {
				order <- i
			}
		}()
		for s.waiters.Load() != int64(i+1) { // queued in the order 0, 1, 2
			time.Sleep(time.Millisecond)
		}
	}
	for want := range 3 {
		s.release()
		if got := <-order; got != want {
			t.Errorf("slot %d went to waiter %d", want, got)
		}
	}
	if s.inUse() != 1 || s.waiters.Load() != 0 {
		t.Errorf("in use %d, waiting %d; want 1, 0", s.inUse(), s.waiters.Load())
	}
}
