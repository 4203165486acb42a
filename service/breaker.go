package service

import (
	"sync"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// Breaker states, as the series breaker_state records them.
const (
	closed   = 0
	open     = 1
	halfOpen = 2
)

// breaker is Resilience4j's CircuitBreaker with a count-based sliding
// window: closed, it records each call's outcome (failed, slow) in the
// window and opens when, with at least minimumNumberOfCalls recorded,
// the failure rate or the slow-call rate reaches its threshold; open, it
// refuses calls for waitDurationInOpenState, then lets the next call
// move it to half-open (automaticTransitionFromOpenToHalfOpenEnabled is
// false by default); half-open, it permits permittedNumberOfCalls calls
// and, once they are recorded, opens again or closes on their rates.
type breaker struct {
	cfg scenario.ServiceBreaker

	mu       sync.Mutex
	state    int
	openedAt time.Time
	// The window (closed) or the trial calls (half-open).
	failed, slow []bool
	next, n      int
	nFailed      int
	nSlow        int
	permitted    int // half-open calls let through
}

func newBreaker(cfg scenario.ServiceBreaker) *breaker {
	b := &breaker{cfg: cfg}
	b.reset(cfg.SlidingWindowSize)
	return b
}

func (b *breaker) reset(size int) {
	b.failed, b.slow = make([]bool, size), make([]bool, size)
	b.next, b.n, b.nFailed, b.nSlow, b.permitted = 0, 0, 0, 0, 0
}

// allow says whether a call may go ahead now.
func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case open:
		if now.Sub(b.openedAt) < b.cfg.WaitInOpen {
			return false
		}
		b.state = halfOpen
		b.reset(b.cfg.PermittedCallsInHalfOpen)
		fallthrough
	case halfOpen:
		if b.permitted >= b.cfg.PermittedCallsInHalfOpen {
			return false
		}
		b.permitted++
	}
	return true
}

// record notes a permitted call's outcome.
func (b *breaker) record(now time.Time, failed bool, took time.Duration) {
	slow := took > b.cfg.SlowCallDuration
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == open {
		return // a call let through before the breaker opened
	}
	size := len(b.failed)
	if b.n == size {
		if b.failed[b.next] {
			b.nFailed--
		}
		if b.slow[b.next] {
			b.nSlow--
		}
	} else {
		b.n++
	}
	b.failed[b.next], b.slow[b.next] = failed, slow
	if failed {
		b.nFailed++
	}
	if slow {
		b.nSlow++
	}
	b.next = (b.next + 1) % size
	need := min(b.cfg.MinimumNumberOfCalls, size)
	if b.state == halfOpen {
		need = b.cfg.PermittedCallsInHalfOpen
	}
	if b.n < need {
		return
	}
	failRate := 100 * float64(b.nFailed) / float64(b.n)
	slowRate := 100 * float64(b.nSlow) / float64(b.n)
	switch {
	case failRate >= b.cfg.FailureRateThreshold || slowRate >= b.cfg.SlowCallRateThreshold:
		b.state, b.openedAt = open, now
		b.reset(b.cfg.SlidingWindowSize)
	case b.state == halfOpen:
		b.state = closed
		b.reset(b.cfg.SlidingWindowSize)
	}
}

// stateNow is the state for the series (open stays open until a call
// finds its wait over, as in Resilience4j).
func (b *breaker) stateNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}
