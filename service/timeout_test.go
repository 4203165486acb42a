package service

import (
	"testing"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// An overloaded service with callers who give up after 1 s: with a FIFO
// queue the oldest requests are served after their callers left (wasted
// work) and goodput collapses while throughput holds; a LIFO queue
// serves the newest, in time; cancel_on_timeout drops the abandoned
// ones instead of serving them.
func TestTimeoutsFIFOStarvesLIFOServes(t *testing.T) {
	t.Parallel()
	onPaths(t, testTimeoutsFIFOStarvesLIFOServes)
}

func testTimeoutsFIFOStarvesLIFOServes(t *testing.T, goroutines bool) {
	// 2 threads of 50 ms hold 40/s; 60/s arrive.
	base := scenario.Service{Name: "s", Instances: 1, MaxThreads: 2, AcceptCount: 1000, Timeout: time.Second,
		Pool: scenario.ServicePool{Size: 2, ConnectionTimeout: time.Minute}}
	src := "\\sleep 50 ms\n"
	var late map[string]int // requests that got a thread after their caller gave up
	run := func(name string, mutate func(*scenario.Service)) counts {
		cfg := base
		cfg.Name = name
		mutate(&cfg)
		passages, _, svc := runThrough(t, goroutines, cfg, src, 60, 8*time.Second)
		for _, p := range passages {
			if p.started.Sub(p.entered) > cfg.Timeout {
				late[name]++
			}
		}
		return svc.counts()
	}
	late = map[string]int{}
	fifo := run("fifo", func(*scenario.Service) {})
	lifo := run("lifo", func(c *scenario.Service) { c.LIFO = true })
	cancel := run("cancel", func(c *scenario.Service) { c.CancelOnTimeout = true })
	t.Logf("fifo %+v\nlifo %+v\ncancel %+v\nthreads taken after the caller gave up: %v", fifo, lifo, cancel, late)
	if fifo.wasted == 0 || fifo.timeouts == 0 {
		t.Errorf("fifo: %d wasted, %d timeouts; want both", fifo.wasted, fifo.timeouts)
	}
	if fifo.left < 200 {
		t.Errorf("fifo: throughput %d in 8 s, want the threads' ~320", fifo.left)
	}
	if late["fifo"] < 100 {
		t.Errorf("fifo: %d requests got a thread after their caller gave up, want most of them", late["fifo"])
	}
	if lifo.good < 2*fifo.good {
		t.Errorf("goodput: lifo %d, fifo %d; want lifo at least twice fifo's", lifo.good, fifo.good)
	}
	// cancel_on_timeout: no thread serves a request whose caller had
	// gone before it got one; those are dropped instead.
	if cancel.cancelled == 0 || late["cancel"] > 0 {
		t.Errorf("cancel_on_timeout: %d dropped, %d served after their caller gave up; want some dropped, none served",
			cancel.cancelled, late["cancel"])
	}
}

// counts are a service's totals, for tests.
type counts struct{ arrivals, left, good, timeouts, wasted, cancelled, refused int64 }

func (s *Service) counts() counts {
	c := &s.c
	return counts{c.arrivals.Load(), c.left.Load(), c.good.Load(), c.timeouts.Load(), c.wasted.Load(), c.cancelled.Load(), c.refused.Load()}
}
