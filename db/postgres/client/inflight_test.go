package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	"github.com/firedrill/firedrill/engine"
)

// Clients blocked on a row lock finish no transaction, so their
// intervals record no latency; the progress ticks still report the age
// of the oldest transaction in flight, rising while the lock is held,
// and back to (nearly) nothing once it is released.
func TestOldestInFlightRisesDuringALockWait(t *testing.T) {
	pg := admin(t)
	setup(t, pg, "CREATE TABLE inflight_row (id int PRIMARY KEY, n int); INSERT INTO inflight_row VALUES (1, 0)", "DROP TABLE inflight_row")
	cfg := newConfig(t, "u.sql", "UPDATE inflight_row SET n = n + 1 WHERE id = 1;\n")
	cfg.Clients, cfg.Duration = 2, 3*time.Second
	cfg.Progress = 200 * time.Millisecond
	var mu sync.Mutex
	type tick struct {
		elapsed time.Duration
		count   int64
		oldest  time.Duration
	}
	var ticks []tick
	cfg.OnProgress = func(p *engine.Progress) {
		mu.Lock()
		ticks = append(ticks, tick{p.Elapsed, p.Interval.Total.Count, p.OldestInFlight})
		mu.Unlock()
	}
	holder := admin(t)
	done := start(t, context.Background(), pgtarget.Extended, cfg)
	time.Sleep(500 * time.Millisecond)
	sqlExec(t, holder, "BEGIN; UPDATE inflight_row SET n = n WHERE id = 1")
	lockedAt := time.Now()
	time.Sleep(1500 * time.Millisecond)
	held := time.Since(lockedAt)
	sqlExec(t, holder, "COMMIT")
	out := <-done
	if out.err != nil {
		t.Fatalf("Run: %v\n%s", out.err, out.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	var peak time.Duration
	blocked := 0
	for _, tk := range ticks {
		peak = max(peak, tk.oldest)
		if tk.count == 0 && tk.oldest > 0 {
			blocked++
		}
	}
	t.Logf("lock held %v; ticks %+v", held, ticks)
	// The first blocked transaction was due a little before the lock was
	// taken at the earliest, and the last tick before the release comes
	// at most a tick (plus a noisy machine's delay) before it.
	if peak < held-600*time.Millisecond || peak > held+time.Second {
		t.Errorf("oldest in flight peaked at %v, want about the %v the lock was held", peak, held)
	}
	if blocked < 3 {
		t.Errorf("%d ticks with no transaction done and one in flight, want the lock's ~7", blocked)
	}
	if last := ticks[len(ticks)-1]; last.oldest > 500*time.Millisecond {
		t.Errorf("last tick's oldest in flight %v: still counting the released wait", last.oldest)
	}
}
