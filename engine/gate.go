package engine

import (
	"context"
	"time"
)

// Gate is the application tier a workload's requests pass through on
// their way to the database (package service: threads, a queue, CPU, a
// pool, retries, a breaker, a bulkhead, a throttle). The engine's client
// is the caller: it hands each request to Serve when it is due and waits
// for the response; the Gate decides whether, when and how often the
// request's transaction runs.
type Gate interface {
	// Serve serves one request that arrived at due. It calls
	// call.Attempt for each run of the transaction on the database (none
	// for a request turned away, more than one when it retries), and
	// call.Refuse for each try the tier failed itself (refused, throttled,
	// a pool timeout, the breaker open). It returns when the request is
	// done, or at once when call.Attempt says the client must stop.
	Serve(ctx context.Context, due time.Time, call GateCall)
}

// GateCall is what a Gate can do with one request: run its transaction
// on the database, record a try that never got there, and wait. A Gate
// waits only in Park (and in Attempt): the client may be a coroutine of
// an event loop, which any other blocking wait would stall with every
// client on it.
type GateCall interface {
	// Attempt runs the transaction once and records it as every
	// transaction is; ok says it succeeded, stop that the client must
	// stop (the run is ending or the client was aborted).
	Attempt(ctx context.Context) (ok, stop bool)
	// Refuse records a failed try that the tier ended before the
	// database: a failed transaction with the code (ContinueOnError's
	// error counts), and its latency zero.
	Refuse(code string, err error)
	// Park waits until Wake is called, deadline passes (zero: no
	// deadline) or the run stops; false if it stops. A Wake before Park
	// makes it return at once, and it may return for no reason: the Gate
	// checks what it waited for each time.
	Park(ctx context.Context, deadline time.Time) bool
	// Wake ends the request's Park; any goroutine may call it.
	Wake()
}

// gateCall is a client's GateCall for the request in hand (one per
// client, reused: serving through a Gate allocates nothing here).
type gateCall struct {
	c         *client
	scheduled int64
	stop      bool
}

var _ GateCall = (*gateCall)(nil)

// serveGated serves the request due at scheduled through cfg.Gate; false
// if the client must stop.
func (c *client) serveGated(ctx context.Context, scheduled int64) bool {
	if c.gate == nil {
		c.gate = &gateCall{c: c}
	}
	g := c.gate
	g.scheduled, g.stop = scheduled, false
	c.r.cfg.Gate.Serve(ctx, c.r.start.Add(time.Duration(scheduled)*time.Microsecond), g)
	return !g.stop
}

func (g *gateCall) Attempt(ctx context.Context) (ok, stop bool) {
	if g.stop {
		return false, true
	}
	c := g.c
	before := c.okTx.Load()
	if !c.transaction(ctx, g.scheduled) {
		g.stop = true
		return false, true
	}
	if s := c.retrySlot; s != nil { // the pool's slot could not be reconnected
		c.retrySlot = nil
		ok := c.reconnectPause(ctx, s.connFails)
		c.r.pool.release(s, false)
		if !ok {
			g.stop = true
			return false, true
		}
	}
	return c.okTx.Load() > before, false
}

func (g *gateCall) Refuse(code string, err error) {
	c := g.c
	r := c.r
	si := c.chooseScript()
	now := r.nowUS()
	out := txOutcome{script: si, failure: Other, failedCmd: -1, tries: 1, poolWait: -1,
		codes: append(c.codes[:0], r.noteError(&DBError{Code: code, Err: err}, si, -1))}
	c.record(&out, g.scheduled, now, now)
	c.codes = out.codes
}

func (g *gateCall) Park(ctx context.Context, deadline time.Time) bool { return g.c.park(ctx, deadline) }

func (g *gateCall) Wake() { g.c.wake() }
