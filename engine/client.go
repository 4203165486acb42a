package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/firedrill/firedrill/script"
)

// client runs transactions for one simulated user.
type client struct {
	id     int
	r      *run
	conn   Conn
	connMu sync.Mutex // guards conn against Interrupt during -C reconnects
	vars   *script.Vars
	env    script.Env
	choose *threadChooser // its pgbench thread's script picker
	pacer  *poissonPacer  // its pgbench thread's --rate schedule
	shard  *shard
	cnt    int64 // transactions done (pgbench's per-client counter)
	timer  *time.Timer
	shell  []byte
	slot   *poolSlot  // the pooled connection borrowed for this transaction
	codes  []string   // reused for txOutcome.codes
	ls     *loopState // on an event loop; nil with a goroutine of its own
	fbConn Conn       // the session on Config.Fallback's target, once opened
	gate   *gateCall  // its request in hand, with Config.Gate
	// With a Gate: a wake-up for its Park is on its way (wakeToken), the
	// channel it comes on without a loop, the timer of a Park's deadline
	// (gate_wait.go).
	wakeToken atomic.Bool
	wakeCh    chan struct{}
	parkTimer *time.Timer
	// connGen identifies the pooled session borrowed (poolSlot.gen), 0
	// with none: a loop re-registers a socket whose session changed.
	connGen uint64

	// interrupted is set once the supervisor cancels the client's command
	// in flight: the error that follows is the run's doing, not the
	// script's.
	interrupted atomic.Bool

	// Transactions ended, for the supervisor's FailureLimit: succeeded,
	// failed, and of those failed the ones that are the incident being
	// measured rather than a broken script (measuredFailure).
	okTx, failedTx, measuredFailedTx atomic.Int64
	// fastFails counts the transactions in a row that failed at once
	// (before fastFailure), for the closed model's backoff.
	fastFails int

	// connFails counts the attempts in a row to open a session that
	// failed, for the reconnect backoff; waiting says the client counts
	// in run.unconnected; refused that it counted in run.refusedClients.
	// retrySlot is a pool slot whose connection the client failed to
	// open: it keeps the slot out of the pool during the slot's backoff.
	connFails        int
	retrySlot        *poolSlot
	waiting, refused bool
	jitter           *rand.Rand // spreads reconnect retries

	// inFlightSince is when the transaction in flight was due (µs since
	// the run's start, +1), zero between transactions (see inflight.go).
	inFlightSince atomic.Int64
}

// A closed-model client (with ContinueOnError) whose transactions fail
// at once backoffAfter times in a row waits before the next one, 1 ms
// more for each further failure up to maxBackoff: a script that can only
// fail (a typo, a division by zero) would otherwise spin a core and fill
// the error counts with millions of copies of one error.
const (
	backoffAfter = 16
	fastFailure  = 10 * time.Millisecond
	maxBackoff   = 100 * time.Millisecond
)

// A session the server refused, could not open or lost is retried as an
// application's pool retries it: at once after a loss, then after a
// delay that doubles from reconnectMin up to reconnectMax with each
// failure in a row, half of it random (jitter) so that the clients a
// full server refused do not come back in lockstep.
const (
	reconnectMin = 10 * time.Millisecond
	reconnectMax = time.Second
)

// txOutcome is how one transaction ended.
type txOutcome struct {
	script    int
	failure   FailureKind // 0 = success
	failedCmd int
	tries     int
	retryCmds []int    // command index of each retry's error
	codes     []string // with ContinueOnError: the code of each failed try
	poolWait  int64    // µs waited for a pooled connection; -1 = no pool
	// fault says the transaction failed by its connection: the session
	// could not be opened (Refused, Unavailable) or was lost; the last
	// of codes is its code.
	fault ConnFault
}

func newClient(r *run, id int) *client {
	c := &client{id: id, r: r, shard: r.col.shardFor(id)}
	cfg := r.cfg
	c.vars = script.NewVars(cfg.Symbols)
	syms := cfg.Symbols
	for _, d := range cfg.Defines {
		c.vars.SetString(syms.Ref(d.Name), d.Value)
	}
	c.vars.SetInt(syms.Ref(script.VarScale), int64(cfg.Scale))
	c.vars.SetInt(syms.Ref(script.VarClientID), int64(id))
	c.env = script.Env{Vars: c.vars}
	r.seedClient(c) // pgbench's seeds: Rand, :random_seed, :default_seed
	if cfg.Gate != nil {
		c.wakeCh = make(chan struct{}, 1)
	}
	if cfg.Stderr != nil {
		c.env.Debug = stderrWriter{r}
	}
	return c
}

// interrupt cancels the client's command in flight (from the supervisor).
func (c *client) interrupt(hard bool) {
	c.interrupted.Store(true)
	c.connMu.Lock()
	conn := c.conn
	c.connMu.Unlock()
	if conn != nil {
		conn.Interrupt(hard)
	}
}

func (c *client) loop(ctx context.Context) {
	r := c.r
	cfg := r.cfg
	defer c.setWaiting(false)
	for {
		if r.stopping.Load() || ctx.Err() != nil {
			return
		}
		if cfg.Transactions > 0 && c.cnt >= int64(cfg.Transactions) {
			return
		}
		if c.id >= int(r.active.Load()) { // a stage wants fewer clients now
			if c.conn != nil && r.pool == nil {
				c.dropConn()
			}
			c.setWaiting(false)
			if !c.sleep(ctx, 20*time.Millisecond) {
				return
			}
			continue
		}
		if c.conn == nil && r.pool == nil && !cfg.Connect {
			// Not connected yet (a ramp added it) or the connection broke.
			if !c.connectLate(ctx) {
				if ctx.Err() != nil || !cfg.ContinueOnError {
					return
				}
				continue
			}
		}
		now := r.nowUS()
		scheduled := now
		if r.pacer != nil {
			scheduled = c.pacer.next()
			if r.endUS > 0 && scheduled >= r.endUS {
				return
			}
			// With a latency limit, slots already too late are skipped
			// without running, as pgbench does.
			for cfg.LatencyLimit > 0 && now-scheduled > int64(cfg.LatencyLimit/time.Microsecond) &&
				(cfg.Transactions == 0 || c.cnt < int64(cfg.Transactions)) {
				c.recordSkip(scheduled)
				scheduled = c.pacer.next()
			}
			if cfg.Transactions > 0 && c.cnt >= int64(cfg.Transactions) {
				return
			}
			if !c.waitUntil(ctx, scheduled) {
				return
			}
			if r.endUS > 0 && r.nowUS() >= r.endUS {
				return
			}
		}
		if cfg.Connect {
			if !c.reconnect(ctx) {
				return
			}
		}
		if cfg.Gate != nil {
			if !c.serveGated(ctx, scheduled) {
				c.dropConn()
				return
			}
		} else if !c.transaction(ctx, scheduled) {
			c.dropConn()
			return
		}
		if s := c.retrySlot; s != nil { // the pool's slot could not be reconnected
			c.retrySlot = nil
			ok := c.reconnectPause(ctx, s.connFails)
			r.pool.release(s, false)
			if !ok {
				return
			}
		}
		if cfg.Connect {
			c.dropConn()
		}
		if c.fastFails >= backoffAfter && r.pacer == nil {
			d := min(time.Duration(c.fastFails-backoffAfter+1)*time.Millisecond, maxBackoff)
			r.backoffUS.Add(int64(d / time.Microsecond))
			if !c.sleep(ctx, d) {
				return
			}
		}
	}
}

// waitUntil sleeps until the scheduled start (µs since the run's start).
func (c *client) waitUntil(ctx context.Context, scheduled int64) bool {
	d := time.Duration(scheduled-c.r.nowUS()) * time.Microsecond
	if d <= 0 {
		return true
	}
	if c.ls != nil {
		return c.loopSleep(ctx, scheduled)
	}
	if c.timer == nil {
		c.timer = time.NewTimer(d)
	} else {
		c.timer.Reset(d)
	}
	select {
	case <-c.timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *client) reconnect(ctx context.Context) bool {
	t0 := time.Now()
	conn, err := c.connect(ctx)
	c.r.connTime.Add(int64(time.Since(t0) / time.Microsecond))
	c.r.connCount.Add(1)
	if err != nil {
		if ctx.Err() == nil {
			c.r.printf("client %d aborted while establishing connection: %v\n", c.id, err)
			c.r.aborted.Add(1)
		}
		return false
	}
	c.connMu.Lock()
	c.conn = conn
	c.connMu.Unlock()
	return true
}

// connectLate connects a client that had no connection. With
// ContinueOnError a failed attempt (refused, the server down) is counted
// as a failed transaction and retried after a backoff instead of
// aborting the client.
func (c *client) connectLate(ctx context.Context) bool {
	conn, err := c.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		if !c.r.cfg.ContinueOnError {
			c.r.printf("client %d aborted while establishing connection: %v\n", c.id, err)
			c.r.aborted.Add(1)
			return false
		}
		// The transaction the client would have run fails: an outage or
		// a full server counts in the failures and the error rate, with
		// its cause.
		si := c.chooseScript()
		now := c.r.nowUS()
		out := txOutcome{script: si, failure: Other, failedCmd: -1, tries: 1, poolWait: -1, fault: connectFault(err),
			codes: append(c.codes[:0], c.r.noteConnectError(err, si))}
		c.record(&out, now, now, now)
		c.codes = out.codes
		c.connectFailed(out.fault)
		if c.r.cfg.Fallback != nil {
			c.fallBack(ctx, si)
		}
		c.reconnectPause(ctx, c.connFails)
		return false
	}
	c.connected()
	c.connMu.Lock()
	c.conn = conn
	c.connMu.Unlock()
	return true
}

// connectFailed notes a failed attempt to open a session: the client is
// waiting for one, and was refused one at least once.
func (c *client) connectFailed(fault ConnFault) {
	c.connFails++
	if c.r.pool == nil {
		c.setWaiting(true)
	}
	if fault != NoFault && !c.refused {
		c.refused = true
		c.r.refusedClients.Add(1)
	}
}

// connected notes a session opened: the backoff starts over.
func (c *client) connected() {
	c.connFails = 0
	c.setWaiting(false)
}

// setWaiting counts the client in run.unconnected while it waits for a
// session.
func (c *client) setWaiting(w bool) {
	if c.waiting == w {
		return
	}
	c.waiting = w
	if w {
		c.r.unconnected.Add(1)
	} else {
		c.r.unconnected.Add(-1)
	}
}

// reconnectDelay is the pause before the next attempt after fails
// failed ones in a row: reconnectMin doubled per failure up to
// reconnectMax, its second half random ("equal jitter").
func (c *client) reconnectDelay(fails int) time.Duration {
	d := reconnectMax
	if n := fails - 1; n < 10 {
		d = min(reconnectMin<<max(n, 0), reconnectMax)
	}
	if c.jitter == nil {
		c.jitter = rand.New(rand.NewPCG(c.r.cfg.RandomSeed^0xA5A5A5A5, uint64(c.id)+7))
	}
	return d/2 + time.Duration(c.jitter.Int64N(int64(d/2)+1))
}

// reconnectPause waits reconnectDelay; false if the run stopped meanwhile.
func (c *client) reconnectPause(ctx context.Context, fails int) bool {
	t0 := c.r.nowUS()
	ok := c.sleep(ctx, c.reconnectDelay(fails))
	c.r.reconnectUS.Add(c.r.nowUS() - t0) // as slept: the run's end cuts the last pause short
	return ok
}

// connect opens the client's session, on its event loop if it has one.
func (c *client) connect(ctx context.Context) (Conn, error) {
	if c.ls != nil {
		return c.r.target.(LoopTarget).ConnectLoop(ctx, c.id, c)
	}
	return c.r.target.Connect(ctx, c.id)
}

func (c *client) dropConn() {
	c.connMu.Lock()
	conn := c.conn
	c.conn = nil
	c.connMu.Unlock()
	if conn != nil {
		_ = conn.Close()
	}
}

func (c *client) chooseScript() int {
	scripts := c.r.cfg.Scripts
	if len(scripts) == 1 {
		return 0
	}
	w := c.choose.pick(c.r.totalW)
	for i, s := range scripts {
		if w < s.Weight {
			return i
		}
		w -= s.Weight
	}
	return len(scripts) - 1
}

// transaction runs one transaction with pgbench's retry rules and records
// it. It returns false if the client must stop (aborted or interrupted).
func (c *client) transaction(ctx context.Context, scheduled int64) bool {
	r := c.r
	cfg := r.cfg
	si := c.chooseScript()
	sc := cfg.Scripts[si]
	begin := r.nowUS()
	c.startInFlight(scheduled)
	defer c.endInFlight()
	out := txOutcome{script: si, tries: 1, poolWait: -1, codes: c.codes[:0]}
	if r.pool != nil {
		ok, done := c.borrow(ctx, &out)
		if !ok {
			return false
		}
		if done { // timed out waiting: the transaction failed
			c.record(&out, scheduled, begin, r.nowUS())
			c.codes = out.codes
			if cfg.Fallback != nil {
				c.fallBack(ctx, si)
			}
			return true
		}
	}
	saved := *c.env.Rand // a retry replays the same random values
	c.env.Script = si
	broken := false
	for {
		failedCmd, err := c.runScript(ctx, sc)
		if err == nil {
			break
		}
		if c.interrupted.Load() || (errors.Is(err, context.Canceled) && ctx.Err() != nil) {
			// The run is ending and cancelled the command (or cut a
			// \sleep short): not the client's fault, and not counted.
			// Other errors still count after the end of -T, as in
			// pgbench: failures are not retried (canRetry), others abort.
			_ = c.conn.Reset(context.Background())
			c.giveBack(false)
			return false
		}
		var f *Failure
		if !errors.As(err, &f) {
			if !cfg.ContinueOnError {
				c.abort(si, failedCmd, err)
				c.giveBack(false)
				return false
			}
			f = &Failure{Kind: Other, Err: err}
		}
		if cfg.ContinueOnError {
			out.codes = append(out.codes, r.noteError(err, si, failedCmd))
		}
		if rerr := c.conn.Reset(context.Background()); rerr != nil {
			if !cfg.ContinueOnError {
				c.abort(si, failedCmd, fmt.Errorf("%v; then rollback failed: %w", err, rerr))
				c.giveBack(false)
				return false
			}
			// The connection is gone (terminated, server restarted): the
			// transaction fails and the client reconnects.
			broken = true
			out.failure, out.failedCmd, out.fault = f.Kind, failedCmd, Lost
			break
		}
		if f.Kind != Other && c.canRetry(out.tries, scheduled) {
			out.tries++
			out.retryCmds = append(out.retryCmds, failedCmd)
			*c.env.Rand = saved
			continue
		}
		out.failure, out.failedCmd = f.Kind, failedCmd
		break
	}
	end := r.nowUS()
	if broken && r.pool == nil {
		c.dropConn()
	}
	c.giveBack(broken)
	c.record(&out, scheduled, begin, end)
	c.codes = out.codes
	if fb := cfg.Fallback; fb != nil && fb.fallbackDue(out.failure != 0, end-scheduled) {
		c.fallBack(ctx, si)
	}
	return true
}

// borrow takes a pooled connection for the transaction, connecting the
// slot if its connection broke earlier. ok is false if the client must
// stop; done is true if the transaction already failed (pool timeout, or
// the slot could not reconnect).
func (c *client) borrow(ctx context.Context, out *txOutcome) (ok, done bool) {
	r := c.r
	t0 := r.nowUS()
	slot, err := c.acquireSlot(ctx)
	out.poolWait = r.nowUS() - t0
	if err != nil {
		if ctx.Err() != nil {
			return false, false
		}
		out.failure, out.failedCmd = Other, -1
		out.codes = append(out.codes, r.noteError(&DBError{Code: CodePoolTimeout, Err: fmt.Errorf(
			"%w after %v (pool of %d)", err, r.cfg.PoolTimeout, r.cfg.Pool)}, out.script, -1))
		return true, true
	}
	slot.poller.cur = c
	if slot.conn == nil {
		conn, err := c.connectSlot(ctx, slot)
		if err != nil {
			if ctx.Err() != nil {
				r.pool.release(slot, false)
				return false, false
			}
			out.failure, out.failedCmd, out.fault = Other, -1, connectFault(err)
			out.codes = append(out.codes, r.noteConnectError(err, out.script))
			c.connectFailed(out.fault)
			// The slot backs off as a pool retries a connection it could
			// not open: out of the pool until its next try (loop).
			slot.connFails++
			c.retrySlot = slot
			return true, true
		}
		slot.connFails = 0
		r.pool.setConn(slot, conn)
	}
	c.slot, c.connGen = slot, slot.gen
	c.connMu.Lock()
	c.conn = slot.conn
	c.connMu.Unlock()
	return true, false
}

// giveBack returns a borrowed pooled connection; without a pool it does
// nothing.
func (c *client) giveBack(broken bool) {
	if c.slot == nil {
		return
	}
	c.connMu.Lock()
	c.conn = nil
	c.connMu.Unlock()
	c.r.pool.release(c.slot, broken)
	c.slot, c.connGen = nil, 0
}

func (c *client) canRetry(tries int, scheduled int64) bool {
	cfg := c.r.cfg
	if c.r.stopping.Load() {
		return false
	}
	if cfg.MaxTries != 0 && tries >= cfg.MaxTries {
		return false
	}
	if cfg.LatencyLimit > 0 && c.r.nowUS()-scheduled >= int64(cfg.LatencyLimit/time.Microsecond) {
		return false
	}
	return true
}

func (c *client) abort(si, cmd int, err error) {
	c.r.aborted.Add(1)
	c.r.printf("client %d script %d aborted in command %d query 0: %v\n", c.id, si, cmd, err)
}

// runScript interprets one script; on error it returns the failing
// command's index.
func (c *client) runScript(ctx context.Context, sc *script.Script) (int, error) {
	cmds := sc.Commands
	perCmd := c.r.cfg.PerCommand
	// Each command's latency is recorded as it completes, as pgbench does
	// (also in a try that fails later), straight into the run's shared
	// per-command statistics.
	cells := c.r.cmds.scripts[c.env.Script]
	bg := context.Background() // no per-query context: cancellation goes through Interrupt
	pc := 0
	for pc < len(cmds) {
		cmd := cmds[pc]
		var t0 int64
		if perCmd {
			t0 = c.r.nowUS()
		}
		c.env.Command = pc
		next := pc + 1
		var err error
		switch cmd.Kind {
		case script.KindSet:
			var v script.Value
			v, err = cmd.Expr.Eval(&c.env)
			if err == nil {
				c.vars.SetValue(cmd.Var, v)
			}
		case script.KindSleep:
			var us int64
			us, err = cmd.Sleep.Micros(c.vars)
			if err == nil && us > 0 {
				if !c.sleep(ctx, time.Duration(us)*time.Microsecond) {
					return pc, context.Canceled
				}
			}
		case script.KindIf, script.KindElif:
			// Reached in sequence: \if is evaluated; \elif means a branch
			// before it was taken, so skip to after \endif.
			if cmd.Kind == script.KindElif {
				next = cmd.End + 1
				break
			}
			next, err = c.branch(cmds, pc)
		case script.KindElse:
			next = cmd.End + 1
		case script.KindEndif:
		case script.KindShell, script.KindSetShell:
			err = c.runShell(cmd)
		default:
			err = c.conn.Exec(bg, cmd, c.vars)
		}
		if err != nil {
			return pc, err
		}
		if perCmd {
			cells[pc].latency(c.r.nowUS() - t0)
		}
		pc = next
	}
	return -1, nil
}

// branch evaluates an \if and, while conditions are false, the \elif
// branches it jumps to; it returns the index to continue at.
func (c *client) branch(cmds []*script.Command, pc int) (int, error) {
	for {
		cmd := cmds[pc]
		switch cmd.Kind {
		case script.KindIf, script.KindElif:
			v, err := cmd.Expr.Eval(&c.env)
			if err != nil {
				return pc, err
			}
			ok, err := v.Truth()
			if err != nil {
				return pc, err
			}
			if ok {
				return pc + 1, nil
			}
			pc = cmd.Next
		default: // \else or \endif
			return pc + 1, nil
		}
	}
}

func (c *client) sleep(ctx context.Context, d time.Duration) bool {
	if c.ls != nil {
		return c.loopSleep(ctx, c.r.nowUS()+int64(d/time.Microsecond))
	}
	if c.timer == nil {
		c.timer = time.NewTimer(d)
	} else {
		c.timer.Reset(d)
	}
	select {
	case <-c.timer.C:
		return true
	case <-ctx.Done():
		if !c.timer.Stop() {
			<-c.timer.C
		}
		return false
	}
}

// runShell runs \shell and \setshell through /bin/sh, as pgbench runs them
// through system() and popen().
func (c *client) runShell(cmd *script.Command) error {
	c.shell = c.shell[:0]
	for i, a := range cmd.Args {
		if i > 0 {
			c.shell = append(c.shell, ' ')
		}
		if a.Var == script.NoVar {
			c.shell = append(c.shell, a.Text...)
			continue
		}
		var ok bool
		c.shell, ok = c.vars.AppendText(c.shell, a.Var)
		if !ok {
			return fmt.Errorf("%s: undefined variable %q", cmd.Kind, c.vars.Symbols().Name(a.Var))
		}
	}
	sh := exec.Command("/bin/sh", "-c", string(c.shell))
	if cmd.Kind == script.KindShell {
		if err := sh.Run(); err != nil {
			return fmt.Errorf("shell command %q: %w", c.shell, err)
		}
		return nil
	}
	out, err := sh.Output()
	if err != nil {
		return fmt.Errorf("setshell command %q: %w", c.shell, err)
	}
	text := strings.TrimSpace(string(out))
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return fmt.Errorf("setshell command %q: result %q is not an integer", c.shell, text)
	}
	c.vars.SetInt(cmd.Var, n)
	return nil
}

func (c *client) recordSkip(scheduled int64) {
	sh := c.shard
	sh.mu.Lock()
	sh.cur.Total.Skipped++
	sh.mu.Unlock()
	c.cnt++
	if c.r.cfg.Log != nil {
		c.r.cfg.Log.Log(&TxRecord{Client: c.id, TxNo: c.cnt, Skipped: true, Script: 0, EndUnixUS: c.unixNow(), LagUS: c.r.nowUS() - scheduled})
	}
}

func (c *client) unixNow() int64 { return time.Now().UnixMicro() }

// count tallies a transaction's outcome for the failure limit, the
// backoff and outages: a success ends an outage.
func (c *client) count(out *txOutcome, begin, end int64) {
	if out.failure == 0 {
		c.okTx.Add(1)
		c.fastFails = 0
		if c.r.outageOpen.Load() {
			c.r.endOutage(time.Duration(begin)*time.Microsecond, time.Duration(end)*time.Microsecond, true)
		}
		return
	}
	tookUS := end - begin
	c.failedTx.Add(1)
	if c.measuredFailure(out) {
		c.measuredFailedTx.Add(1)
	}
	if tookUS < int64(fastFailure/time.Microsecond) {
		c.fastFails++
	} else {
		c.fastFails = 0
	}
}

// measuredFailure says whether a failed transaction is what the run
// measures, which the failure limit must not stop: its connection failed
// (an outage, a server at its limit), or it ran out of tries on a
// deadlock or serialization failure in a workload that retries them (the
// conflicts are the incident, as gap-lock deadlocks under REPEATABLE
// READ; a workload that does not retry them has them stop the run).
func (c *client) measuredFailure(out *txOutcome) bool {
	if out.fault != NoFault {
		return true
	}
	retried := c.r.cfg.MaxTries != 1
	return retried && (out.failure == Serialization || out.failure == Deadlock)
}

// record adds a finished transaction to the client's shard.
func (c *client) record(out *txOutcome, scheduled, begin, end int64) {
	cfg := c.r.cfg
	latency := end - scheduled
	lag := begin - scheduled
	late := cfg.LatencyLimit > 0 && latency > int64(cfg.LatencyLimit/time.Microsecond)
	sh := c.shard
	sh.mu.Lock()
	iv := sh.cur
	ss := &iv.Scripts[out.script]
	for _, st := range [2]*Stats{&iv.Total, &ss.Stats} {
		if out.tries > 1 {
			st.Retried++
			st.Retries += int64(out.tries - 1)
		}
		switch out.failure {
		case Serialization:
			st.SerializationFailures++
		case Deadlock:
			st.DeadlockFailures++
		case Other:
			st.OtherFailures++
		default:
			st.Count++
			st.Latency.Add(float64(latency))
			if c.r.pacer != nil {
				st.Lag.Add(float64(lag))
			}
			if late {
				st.Late++
			}
		}
	}
	if out.failure == 0 {
		iv.Hist.Record(latency)
		ss.Hist.Record(latency)
	}
	if out.poolWait >= 0 {
		iv.PoolWait.Record(out.poolWait)
	}
	if len(out.codes) > 0 {
		if iv.Errors == nil {
			iv.Errors = make(map[string]int64)
		}
		for _, code := range out.codes {
			iv.Errors[code]++
		}
		if out.fault != NoFault {
			counts := &iv.Refused
			switch out.fault {
			case Unavailable:
				counts = &iv.Unavailable
			case Lost:
				counts = &iv.Lost
			}
			if *counts == nil {
				*counts = make(map[string]int64)
			}
			(*counts)[out.codes[len(out.codes)-1]]++
		}
	}
	sh.mu.Unlock()
	cells := c.r.cmds.scripts[out.script]
	if out.failure != 0 && out.failedCmd >= 0 {
		cells[out.failedCmd].failures.Add(1)
	}
	for _, rc := range out.retryCmds {
		cells[rc].retries.Add(1)
	}
	c.count(out, begin, end)
	c.cnt++
	if cfg.Log != nil {
		cfg.Log.Log(&TxRecord{
			Client: c.id, TxNo: c.cnt, Script: out.script, LatencyUS: latency, LagUS: lag,
			Retries: out.tries - 1, Failure: out.failure, EndUnixUS: c.unixNow(),
		})
	}
}
