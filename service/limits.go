package service

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// semaphore bounds concurrent holders: a bulkhead's calls, a pool's
// connections. waiters counts those waiting.
type semaphore struct {
	slots   chan struct{}
	waiters atomic.Int64
}

func newSemaphore(n int) *semaphore { return &semaphore{slots: make(chan struct{}, n)} }

// acquire takes a slot, waiting at most wait (0: not at all); false if
// none came in time or done closed.
func (s *semaphore) acquire(wait time.Duration, done <-chan struct{}) bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	if wait <= 0 {
		return false
	}
	s.waiters.Add(1)
	defer s.waiters.Add(-1)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-done:
		return false
	}
}

func (s *semaphore) release() { <-s.slots }

// inUse is the number of slots taken.
func (s *semaphore) inUse() int { return len(s.slots) }

// throttle is a token bucket admitting Rate requests a second with a
// bucket of Burst. A local one debits a token at each admission; a remote
// one (a limiter fed through a queue) learns of each admission Lag late,
// so under a surge it keeps admitting on the tokens it still believes
// are there, then refuses until the bucket refills. Its debt is bounded
// by one bucket.
type throttle struct {
	cfg scenario.ServiceThrottle

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	pending []time.Time // remote: admissions the limiter has not seen yet
}

func newThrottle(cfg scenario.ServiceThrottle) *throttle {
	return &throttle{cfg: cfg, tokens: cfg.Burst}
}

// admit says whether a request arriving now is let in.
func (t *throttle) admit(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() {
		t.tokens = min(t.cfg.Burst, t.tokens+now.Sub(t.last).Seconds()*t.cfg.Rate)
	}
	t.last = now
	seen := 0
	for seen < len(t.pending) && now.Sub(t.pending[seen]) >= t.cfg.Lag {
		seen++
	}
	if seen > 0 {
		t.tokens = max(-t.cfg.Burst, t.tokens-float64(seen))
		t.pending = append(t.pending[:0], t.pending[seen:]...)
	}
	if t.tokens < 1 {
		return false
	}
	if t.cfg.Remote {
		t.pending = append(t.pending, now)
	} else {
		t.tokens--
	}
	return true
}

// lag is how late the limiter's view is now: the age of the oldest
// admission it has not seen (0 for a local one).
func (t *throttle) lag(now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return 0
	}
	return min(now.Sub(t.pending[0]), t.cfg.Lag)
}

// retryBudget allows retries up to a fraction of the calls of the last
// 10 s (Finagle's RetryBudget, without its floor), in one-second buckets.
type retryBudget struct {
	ratio float64

	mu      sync.Mutex
	calls   [10]float64
	retries [10]float64
	sec     int64 // the second of the newest bucket
}

func (b *retryBudget) roll(now time.Time) int {
	s := now.Unix()
	for b.sec < s {
		b.sec++
		i := int(b.sec % 10)
		if s-b.sec >= 10 {
			b.calls, b.retries = [10]float64{}, [10]float64{}
			b.sec = s
			break
		}
		b.calls[i], b.retries[i] = 0, 0
	}
	return int(s % 10)
}

func (b *retryBudget) call(now time.Time) {
	b.mu.Lock()
	b.calls[b.roll(now)]++
	b.mu.Unlock()
}

// spend takes one retry from the budget if there is room.
func (b *retryBudget) spend(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.roll(now)
	var calls, retries float64
	for j := range b.calls {
		calls += b.calls[j]
		retries += b.retries[j]
	}
	if retries+1 > b.ratio*calls {
		return false
	}
	b.retries[i]++
	return true
}
