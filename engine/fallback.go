package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/firedrill/firedrill/script"
)

// Fallback is where a client turns when its transaction on the run's
// target failed or was slow: the cache-aside read path of a service,
// which reads the cache and, on a miss or a timeout, the database. Each
// client holds a second session, on Target, opened at its first
// fallback; a workload without a Fallback runs exactly as before.
type Fallback struct {
	// Target is the other system the fallback scripts run on. When the
	// run's clients are on event loops it must be a LoopTarget too (the
	// run keeps goroutines otherwise).
	Target Target
	// Scripts run on Target: one for every script of the run, or one per
	// script (Config.Scripts' order). They share the clients' variables,
	// so that the fallback reads the key the first script chose; their
	// Symbols are Config.Symbols.
	Scripts []*script.Script
	// After is the latency (from the scheduled start under a rate, as
	// the run's own latency) above which a transaction that succeeded
	// falls back too; 0 falls back only on failures.
	After time.Duration
}

// fallbackDue says whether a transaction that ended so falls back.
func (fb *Fallback) fallbackDue(failed bool, latencyUS int64) bool {
	return failed || fb.After > 0 && latencyUS > int64(fb.After/time.Microsecond)
}

// validate checks the fallback against the run's scripts.
func (fb *Fallback) validate(scripts int) error {
	switch {
	case fb.Target == nil:
		return errors.New("fallback: no target")
	case len(fb.Scripts) != 1 && len(fb.Scripts) != scripts:
		return fmt.Errorf("fallback: %d scripts for %d: give one for all, or one per script", len(fb.Scripts), scripts)
	case fb.After < 0:
		return fmt.Errorf("fallback: negative after %v", fb.After)
	}
	for _, s := range fb.Scripts {
		if len(s.Commands) == 0 {
			return fmt.Errorf("fallback: empty command list for script %q", s.Name)
		}
	}
	return nil
}

// canLoop says whether the fallback's sessions can share the clients'
// event loops.
func (fb *Fallback) canLoop() bool {
	if fb == nil {
		return true
	}
	_, ok := fb.Target.(LoopTarget)
	return ok
}

// commandCounts returns the command counts of the fallback's scripts,
// whose per-command statistics follow the run's own scripts' (their
// index in commandRecorder is len(Config.Scripts) + i).
func (fb *Fallback) commandCounts() []int {
	if fb == nil {
		return nil
	}
	out := make([]int, len(fb.Scripts))
	for i, s := range fb.Scripts {
		out[i] = len(s.Commands)
	}
	return out
}

// fallBack runs the fallback script of script si on the client's second
// session, after a transaction that failed or was slow, and counts it in
// the client's interval. A fallback that fails is counted, never
// retried; a session that broke is reopened at the next one.
func (c *client) fallBack(ctx context.Context, si int) {
	r := c.r
	fb := r.cfg.Fallback
	if r.stopping.Load() || ctx.Err() != nil {
		return
	}
	if c.fbConn == nil {
		conn, err := c.connectFallback(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.recordFallback(err)
			}
			return
		}
		c.fbConn = conn
	}
	fi := 0
	if len(fb.Scripts) > 1 {
		fi = si
	}
	// The fallback's session is the client's while it runs, so that the
	// supervisor's interrupt at the run's end reaches it.
	c.connMu.Lock()
	primary := c.conn
	c.conn = c.fbConn
	c.connMu.Unlock()
	saved := c.env.Script
	c.env.Script = len(r.cfg.Scripts) + fi
	_, err := c.runScript(ctx, fb.Scripts[fi])
	c.env.Script = saved
	if err != nil {
		if rerr := c.fbConn.Reset(context.Background()); rerr != nil {
			_ = c.fbConn.Close()
			c.fbConn = nil
		}
	}
	c.connMu.Lock()
	c.conn = primary
	c.connMu.Unlock()
	if err != nil && (c.interrupted.Load() || ctx.Err() != nil) {
		return // the run's end cut it short: not counted
	}
	c.recordFallback(err)
}

// connectFallback opens the client's session on the fallback's target,
// on its event loop if it has one.
func (c *client) connectFallback(ctx context.Context) (Conn, error) {
	t := c.r.cfg.Fallback.Target
	if c.ls != nil {
		return t.(LoopTarget).ConnectLoop(ctx, c.id, c)
	}
	return t.Connect(ctx, c.id)
}

// recordFallback counts a fallback in the client's interval, and its
// error in the run's fallback errors.
func (c *client) recordFallback(err error) {
	sh := c.shard
	sh.mu.Lock()
	sh.cur.Fallbacks++
	if err != nil {
		sh.cur.FallbackFailed++
	}
	sh.mu.Unlock()
	if err != nil {
		c.r.errMu.Lock()
		if c.r.fallbackErr == nil {
			c.r.fallbackErr = err
		}
		c.r.errMu.Unlock()
	}
}

// closeFallback ends the client's second session.
func (c *client) closeFallback() {
	if c.fbConn != nil {
		_ = c.fbConn.Close()
		c.fbConn = nil
	}
}
