package service

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// semaphore bounds concurrent holders: a bulkhead's calls, a pool's
// connections. Those waiting for a slot queue in order of arrival, and a
// slot released goes to the first of them (as HikariCP's hand-off queue
// and a fair semaphore do); waiters counts them.
type semaphore struct {
	mu      sync.Mutex
	size    int
	held    int
	queue   []*semWaiter
	waiters atomic.Int64
}

// semWaiter is a caller waiting for a slot (one per request: it waits
// for one slot at a time).
type semWaiter struct {
	caller  parker
	granted bool
}

func newSemaphore(n int) *semaphore { return &semaphore{size: n} }

// acquire takes a slot, waiting at most wait (0: not at all) in w; false
// if none came in time or the run stopped.
func (s *semaphore) acquire(ctx context.Context, wait time.Duration, w *semWaiter, caller parker) bool {
	s.mu.Lock()
	if s.held < s.size {
		s.held++
		s.mu.Unlock()
		return true
	}
	if wait <= 0 {
		s.mu.Unlock()
		return false
	}
	*w = semWaiter{caller: caller}
	s.queue = append(s.queue, w)
	s.waiters.Add(1)
	s.mu.Unlock()
	deadline := time.Now().Add(wait)
	for {
		ok := caller.Park(ctx, deadline)
		s.mu.Lock()
		if w.granted {
			s.mu.Unlock()
			if !ok {
				s.release()
				return false
			}
			return true
		}
		if !ok || !time.Now().Before(deadline) {
			for i, q := range s.queue {
				if q == w {
					s.queue = append(s.queue[:i], s.queue[i+1:]...)
					break
				}
			}
			s.waiters.Add(-1)
			s.mu.Unlock()
			return false
		}
		s.mu.Unlock()
	}
}

// release gives the slot to the first waiting, or back.
func (s *semaphore) release() {
	s.mu.Lock()
	if len(s.queue) == 0 {
		s.held--
		s.mu.Unlock()
		return
	}
	w := s.queue[0]
	copy(s.queue, s.queue[1:])
	s.queue[len(s.queue)-1] = nil
	s.queue = s.queue[:len(s.queue)-1]
	s.waiters.Add(-1)
	w.granted = true
	caller := w.caller
	s.mu.Unlock()
	caller.Wake()
}

// inUse is the number of slots taken.
func (s *semaphore) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

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
