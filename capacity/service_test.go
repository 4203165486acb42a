package capacity

import (
	"strings"
	"testing"
)

// TestServiceJudge: what of a service binds, from the means of a step's
// window: nothing while nothing waits and threads are free; the CPU or
// the pool when most busy threads wait for it; else the threads.
func TestServiceJudge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		load ServiceLoad
		want string
		text string
	}{
		{"idle", ServiceLoad{Threads: 4, Busy: 1.5}, "", "not saturated"},
		{"all busy, no queue yet", ServiceLoad{Threads: 4, Busy: 3.8}, ServiceThreads, "its threads bind"},
		{"queued for a thread", ServiceLoad{Threads: 4, Busy: 4, Queued: 12, OldestAge: 0.3}, ServiceThreads, "(the oldest 300 ms)"},
		{"refusing", ServiceLoad{Threads: 200, Busy: 150, Refused: 2}, ServiceThreads, "2.0/s refused"},
		{"waiting for connections", ServiceLoad{Threads: 20, Busy: 20, Queued: 5, PoolWaiters: 14, PoolSize: 5}, ServicePool, "its connection pool binds"},
		{"waiting for cores", ServiceLoad{Threads: 20, Busy: 20, Queued: 5, RunQueue: 16, Cores: 2}, ServiceCPU, "its CPU binds"},
	} {
		l := c.load
		l.Name = "api"
		if got := l.judge(); got != c.want {
			t.Errorf("%s: judge = %q, want %q", c.name, got, c.want)
		}
		l.Binds = l.judge()
		if text := l.Text(); !strings.Contains(text, c.text) {
			t.Errorf("%s: %q lacks %q", c.name, text, c.text)
		}
	}
}
