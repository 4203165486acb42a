package service

import (
	"context"
	"sync"
	"time"
)

// cpu is one instance's processors, shared by the requests in their CPU
// phase as a processor-sharing server: with n of them on c cores, each
// progresses at min(1, c/n) of real time, so more running threads on the
// same cores make every request's phase longer. It works in real time:
// use parks the request until it got its CPU (its timer wakes the
// requests whose work is done).
type cpu struct {
	cores float64

	mu    sync.Mutex
	jobs  []*cpuJob
	last  time.Time // when the jobs' remaining work was last brought up to date
	timer *time.Timer
}

type cpuJob struct {
	remaining float64 // seconds of CPU still needed
	finished  bool
	caller    parker
}

func newCPU(cores float64) *cpu { return &cpu{cores: cores} }

// running is the number of requests in their CPU phase.
func (c *cpu) running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.jobs)
}

// use parks the caller until it got need of CPU; false if the run
// stopped first (the job j, the caller's, is then withdrawn).
func (c *cpu) use(ctx context.Context, need time.Duration, j *cpuJob, caller parker) bool {
	*j = cpuJob{remaining: need.Seconds(), caller: caller}
	c.mu.Lock()
	c.advance(time.Now())
	c.jobs = append(c.jobs, j)
	c.schedule()
	c.mu.Unlock()
	for {
		ok := caller.Park(ctx, time.Time{})
		c.mu.Lock()
		if j.finished {
			c.mu.Unlock()
			return true
		}
		if !ok {
			c.advance(time.Now())
			for i, o := range c.jobs {
				if o == j {
					c.jobs = append(c.jobs[:i], c.jobs[i+1:]...)
					break
				}
			}
			c.schedule()
			c.mu.Unlock()
			return false
		}
		c.mu.Unlock()
	}
}

// speed is the real-time fraction each job progresses at now.
func (c *cpu) speed() float64 {
	if n := float64(len(c.jobs)); n > c.cores {
		return c.cores / n
	}
	return 1
}

// advance brings the jobs' remaining work up to now and releases those
// done (under mu).
func (c *cpu) advance(now time.Time) {
	if !c.last.IsZero() && len(c.jobs) > 0 {
		step := now.Sub(c.last).Seconds() * c.speed()
		kept := c.jobs[:0]
		for _, j := range c.jobs {
			j.remaining -= step
			if j.remaining <= 1e-7 {
				j.finished = true
				j.caller.Wake()
				continue
			}
			kept = append(kept, j)
		}
		clear(c.jobs[len(kept):])
		c.jobs = kept
	}
	c.last = now
}

// schedule sets the timer for the next job to finish (under mu).
func (c *cpu) schedule() {
	if len(c.jobs) == 0 {
		if c.timer != nil {
			c.timer.Stop()
		}
		return
	}
	least := c.jobs[0].remaining
	for _, j := range c.jobs[1:] {
		least = min(least, j.remaining)
	}
	d := time.Duration(least / c.speed() * float64(time.Second))
	if c.timer == nil {
		c.timer = time.AfterFunc(d, c.tick)
		return
	}
	c.timer.Reset(d)
}

func (c *cpu) tick() {
	c.mu.Lock()
	c.advance(time.Now())
	c.schedule()
	c.mu.Unlock()
}
