// Package engine drives load: clients that run scripts against a target in
// a closed model (as fast as they can) or an open model (Poisson arrivals at
// a rate, timed from the scheduled start so that coordinated omission is
// corrected, as pgbench --rate does). It records latency in HDR histograms
// per interval, per script and per command. It knows nothing of samplers,
// rules or reports.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/script"
)

// Target opens client sessions on a database.
type Target interface {
	// Connect opens the session of one client.
	Connect(ctx context.Context, clientID int) (Conn, error)
}

// Conn is one client's session: it runs the commands of a script that the
// engine does not interpret itself (SQL and pipeline commands).
type Conn interface {
	// Exec runs one command. Errors that pgbench counts and retries
	// (serialization failures, deadlocks) are returned as *Failure.
	Exec(ctx context.Context, cmd *script.Command, vars *script.Vars) error
	// Reset leaves the session ready for a new transaction: it rolls back
	// an open transaction and ends an unfinished pipeline.
	Reset(ctx context.Context) error
	// Interrupt stops the command in flight from another goroutine: a
	// cancel request, or with hard, by closing the connection.
	Interrupt(hard bool)
	// Close ends the session.
	Close() error
}

// FailureKind says why a transaction failed in a way pgbench counts and
// may retry, rather than aborting the client.
type FailureKind uint8

// The failures pgbench retries.
const (
	Serialization FailureKind = iota + 1 // SQLSTATE 40001
	Deadlock                             // SQLSTATE 40P01
	// Other is any other error, or a pool timeout: it fails the
	// transaction (never retried) only with Config.ContinueOnError;
	// otherwise such errors abort the client, as in pgbench.
	Other
)

// Error codes the engine gives errors that carry no SQLSTATE.
const (
	CodePoolTimeout = "pool-timeout" // no pooled connection within the pool timeout
	CodeConnection  = "08006"        // the connection was lost
	CodeConnect     = "08001"        // a connection could not be opened (refused, no such socket)
	CodeClient      = "client"       // an error of the client itself (script evaluation, \shell)
)

// DBError is an error the database reported, with its code (SQLSTATE)
// and detail, for error accounting. Targets wrap their errors in it.
type DBError struct {
	Code   string
	Detail string // the server's DETAIL, e.g. the processes of a deadlock
	// Fault says what the error means for the connection, in the
	// target's terms (each database has its own codes for "too many
	// connections"); zero for an error of what a command did.
	Fault ConnFault
	Err   error
}

// ConnFault classifies an error that is about the connection rather than
// about the transaction: the engine retries such a connection with
// backoff, as an application's pool does, and counts it by kind instead
// of failing the run. Targets set it on their DBErrors; the engine never
// reads a database's error codes itself.
type ConnFault uint8

// The kinds of connection faults.
const (
	NoFault ConnFault = iota
	// Refused: the server is up but would not open a session now (at its
	// connection limit, out of resources): retry later.
	Refused
	// Unavailable: the server could not be reached or does not accept
	// sessions (down, starting up, shutting down): retry later; while no
	// transaction succeeds it is an outage.
	Unavailable
	// Lost: an open session ended under the client (terminated, the
	// server restarted, the network failed): reconnect.
	Lost
)

func (f ConnFault) String() string {
	switch f {
	case Refused:
		return "refused"
	case Unavailable:
		return "unavailable"
	case Lost:
		return "lost"
	}
	return "none"
}

// FaultOf returns what err says about the connection: the DBError's
// Fault, or for the engine's own codes CodeConnect (unavailable) and
// CodeConnection (lost).
func FaultOf(err error) ConnFault {
	var dbe *DBError
	if !errors.As(err, &dbe) {
		return NoFault
	}
	switch {
	case dbe.Fault != NoFault:
		return dbe.Fault
	case dbe.Code == CodeConnect:
		return Unavailable
	case dbe.Code == CodeConnection:
		return Lost
	}
	return NoFault
}

// connectFault is what a failed attempt to open a session means: a
// refusal or an unavailable server is retried later; any other error
// (a wrong password, no such database) is not about the connection.
func connectFault(err error) ConnFault {
	switch f := FaultOf(err); f {
	case Lost: // the session ended while it was being opened
		return Unavailable
	default:
		return f
	}
}

func (e *DBError) Error() string { return e.Err.Error() }
func (e *DBError) Unwrap() error { return e.Err }

// ErrorInfo describes one kind of error seen during a run.
type ErrorInfo struct {
	Code        string
	Message     string // the first occurrence's message
	Detail      string // and its detail
	Count       int64
	First, Last time.Duration // since the run's start
	// Script and Command locate the first occurrence (indexes into
	// Config.Scripts and its Commands); Command is -1 when the error came
	// from no command (connecting, waiting for the pool).
	Script, Command int
}

// FailureLimit stops a run whose transactions keep failing (a broken
// script, a missing table): the run stops with a *FailingError when, in
// every one-second window of the last For, at least Ratio of the
// transactions that ended failed and some failed by something other than
// a lost or refused connection or, in a workload that retries them
// (MaxTries ≠ 1), deadlocks and serialization failures that outlasted
// their tries: an outage and a conflict storm are measured, not stopped.
// A zero For sets no limit.
type FailureLimit struct {
	Ratio float64 // 0 < Ratio ≤ 1; 1 = every transaction
	For   time.Duration
}

// FailingError is how a run stopped by Config.FailureLimit ends: what
// failed last, and where.
type FailingError struct {
	Limit   FailureLimit
	Code    string // SQLSTATE, or a Code* constant
	Message string
	Script  int // index into Config.Scripts
	Command int // index into its Commands; -1 = no command
	Failed  int64
	At      time.Duration // when the run was stopped, since its start
}

func (e *FailingError) Error() string {
	share := "every transaction"
	if e.Limit.Ratio < 1 {
		share = fmt.Sprintf("%.0f%% or more of the transactions", e.Limit.Ratio*100)
	}
	msg := firstLine(e.Message)
	if !strings.Contains(msg, e.Code) {
		msg += " (" + e.Code + ")"
	}
	return fmt.Sprintf("%s failed for %v: %s", share, e.Limit.For, msg)
}

// Outage is a period in which the run's clients could not open a
// connection because the server was unavailable (down, shutting down or
// starting: ConnFault Unavailable): from the first failed attempt to the
// first success of a transaction begun after the last failure, or to the
// run's end. Sessions lost without failing to reconnect (a terminated
// backend) are failures but not an outage, nor is a server at its
// connection limit (Refused), whose other sessions go on working.
type Outage struct {
	Start, End time.Duration    // since the run's start; End is 0 while it lasts
	Code       string           // the first failure's code (08006, 08001, 57P01 …)
	Message    string           // and its message: the cause
	Failures   int64            // tries that failed during it
	Codes      map[string]int64 // and their codes
	Recovered  bool             // a transaction succeeded again before the run ended
	lastFail   time.Duration
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Failure is an error that fails the transaction but not the client.
type Failure struct {
	Kind FailureKind
	Err  error
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// Define is a -D name=value variable set on every client.
type Define struct{ Name, Value string }

// Config describes one run.
type Config struct {
	Scripts []*script.Script
	Symbols *script.Symbols
	Defines []Define
	Scale   int // the :scale variable

	Clients      int
	Duration     time.Duration // -T; zero when Transactions is set
	Transactions int           // -t, per client
	Rate         float64       // -R, transactions per second over all clients; 0 = unthrottled
	LatencyLimit time.Duration // -L
	MaxTries     int           // --max-tries; 0 = unlimited (bounded by -T or -L)
	PerCommand   bool          // -r: per-command latency histograms
	Connect      bool          // -C: a new connection per transaction
	// Threads is pgbench's -j: the event loops the clients are divided
	// among (default 1). Without an event loop (see LoopTarget) it is
	// ignored.
	Threads int
	// Goroutines runs every client on a goroutine of its own even when
	// the target could run them on event loops (for comparison and
	// debugging; it is slower).
	Goroutines bool

	// Progress is the interval of OnProgress calls; 0 = none.
	Progress   time.Duration
	OnProgress func(*Progress)
	// Log, if set, receives every transaction (pgbench -l).
	Log TxLogger
	// RandomSeed seeds every client's random generator.
	RandomSeed uint64
	// Stderr receives client abort messages and debug() output.
	Stderr io.Writer
	// StopGrace is how long in-flight transactions may run after the
	// run was interrupted before they are cancelled (default 1 s).
	StopGrace time.Duration

	// What scenarios add; the zero values keep pgbench's behaviour.

	// Ticks, if set, replaces the Progress ticker: each value received
	// closes an interval, so several runs and the samplers share one clock.
	Ticks <-chan time.Time
	// FinalProgress makes the intervals add up to the run's totals: the
	// transactions that end after the last tick (those in flight at the
	// end, and the part of the run after the last tick) are reported in
	// one more OnProgress call when every client has stopped. A tick in
	// the last half period before Duration, or after the run began to
	// stop, is left to that call, so that the last interval is not a few
	// milliseconds long. pgbench prints no such line; its -P does not set
	// it.
	FinalProgress bool
	// Shape, if set, is the number of active clients and the rate wanted
	// at a moment since the start (stages, ramps). Clients is then the
	// largest number of clients; Rate only says the run is open-model.
	Shape func(elapsed time.Duration) (clients int, rate float64)
	// Pool > 0 makes the clients share that many connections, as an
	// application's pool does. A transaction waits for a connection at
	// most PoolTimeout (default 30 s), then fails with CodePoolTimeout.
	Pool        int
	PoolTimeout time.Duration
	// ContinueOnError makes an error that pgbench aborts a client for
	// fail only the transaction: the client rolls back (reconnecting if
	// the connection is gone) and goes on. Every failed try is counted
	// by code in Interval.Errors and described in Result.Errors; a
	// closed-model client whose transactions keep failing at once backs
	// off (up to maxBackoff between them, Result.Backoff) so that a
	// broken script does not spin a core.
	//
	// Connections are then data, as in an application's pool: a session
	// the server refuses or cannot open (a ConnFault, also when the run
	// starts) or that is lost is retried with exponential backoff and
	// jitter (reconnectMin to reconnectMax, Result.ReconnectWait); each
	// failed attempt counts as a failed transaction, by code in
	// Interval.Refused, Unavailable or Lost too. Only an error that is not
	// about the connection (a wrong password) ends the run when the
	// clients first connect.
	ContinueOnError bool
	// FailureLimit, if set, stops the run when transactions keep failing.
	FailureLimit FailureLimit
	// OnOutage, if set, is called when an outage starts (End zero) and
	// when it ends (with ContinueOnError); it must be quick.
	OnOutage func(Outage)
	// Fallback, if set, is where a client turns when a transaction
	// failed or was slow (fallback.go); nil for a workload without one.
	Fallback *Fallback
	// Gate, if set, is the application tier the requests pass through
	// (gate.go): the clients are its callers, and it runs each request's
	// transaction when and as often as it decides. Its waits park the
	// client (GateCall.Park), so the clients keep the event loops, and
	// with them Pool's sessions, which follow their borrower from loop to
	// loop (gate_wait.go).
	Gate Gate
}

// Progress is one progress report: the interval just ended.
type Progress struct {
	Time     time.Time     // when the interval ended
	Clients  int           // active clients wanted at its end (with a Shape)
	Rate     float64       // the rate wanted at its end (with a Shape)
	Elapsed  time.Duration // since the benchmark started
	Span     time.Duration // length of the interval
	Interval *Interval     // valid only during the OnProgress call
	// Unconnected is how many active clients had no session at its end,
	// waiting to retry a refused or failed connection (ContinueOnError;
	// not counted with a pool).
	Unconnected int
	// OldestInFlight is the age, at the interval's end, of the oldest
	// transaction still running (from when it was due): a transaction
	// stuck for the whole interval shows here, not in Interval, which
	// records transactions only once they end. Zero when none runs.
	OldestInFlight time.Duration
}

// Result is what a run measured.
type Result struct {
	Elapsed       time.Duration // benchmark time, without initial connections
	ConnTime      time.Duration // time to open the initial connections (or all, with -C)
	Connections   int64         // connections opened (for -C's average)
	Totals        *Interval
	AbortedClient int
	Interrupted   bool        // stopped early by the caller's context
	Errors        []ErrorInfo // with ContinueOnError, by first occurrence
	Outages       []Outage    // with ContinueOnError, in time order
	// Backoff is the time clients spent waiting after repeated immediate
	// failures, over all clients (see ContinueOnError).
	Backoff time.Duration
	// ReconnectWait is the time clients spent waiting before retrying a
	// connection, over all clients; RefusedClients is how many clients
	// failed to open a session at least once (see ContinueOnError).
	ReconnectWait  time.Duration
	RefusedClients int
	// FallbackError is the first error of a fallback that failed (the
	// counts are in the intervals' FallbackFailed).
	FallbackError error
	// SendRing is what the event loops' send rings did (uring.go): zero
	// without loops or io_uring.
	SendRing SendRingStats
}

// SendRingStats counts the event loops' batched sends.
type SendRingStats struct {
	Calls    int64 // io_uring_enter calls that sent requests
	Requests int64 // requests sent through the rings
	Short    int64 // of them, not taken whole by the socket (finished by write)
}

// ErrAborted reports that some clients were aborted by errors; the results
// cover what ran before.
var ErrAborted = errors.New("run was aborted; the above results are incomplete")

// run is the state shared by a run's clients.
type run struct {
	cfg       *Config
	target    Target
	col       *collector
	cmds      *commandRecorder // per-command statistics, whole run
	start     time.Time
	endUS     int64 // -T end, µs since start; 0 = none
	stopping  atomic.Bool
	hardStop  atomic.Bool // commands still running are being interrupted
	loops     []*eventLoop
	pacer     *poissonPacer
	aborted   atomic.Int32
	connCount atomic.Int64
	connTime  atomic.Int64 // µs, with -C
	stderrMu  sync.Mutex
	totalW    int

	seeds    script.PgbenchSeeds // pgbench's per-client and per-thread seeds (seed.go)
	choosers []*threadChooser

	pool   *connPool    // nil: every client owns its connection
	active atomic.Int32 // clients the Shape wants now
	rateAt atomic.Uint64

	errMu  sync.Mutex
	errs   map[string]*ErrorInfo
	errSeq []string
	// lastFailure is the last error that was not a connection's (under
	// errMu), for a FailingError.
	lastFailure ErrorInfo
	// fallbackErr is the first fallback's error (under errMu).
	fallbackErr error

	// Outages (under errMu); outageOpen lets a success check cheaply.
	outages    []Outage
	outageOpen atomic.Bool
	backoffUS  atomic.Int64
	failing    *FailingError // set by the supervisor

	// Connections being retried: active clients without a session now,
	// clients ever refused one, and the time waited before retrying.
	unconnected    atomic.Int32
	refusedClients atomic.Int32
	reconnectUS    atomic.Int64
}

func (r *run) nowUS() int64 { return int64(time.Since(r.start) / time.Microsecond) }

// stderrWriter is Config.Stderr for the clients' debug() output: writes
// are serialized with each other and with printf, since every client
// shares the one writer.
type stderrWriter struct{ r *run }

func (w stderrWriter) Write(p []byte) (int, error) {
	w.r.stderrMu.Lock()
	defer w.r.stderrMu.Unlock()
	return w.r.cfg.Stderr.Write(p)
}

func (r *run) printf(format string, args ...any) {
	if r.cfg.Stderr == nil {
		return
	}
	r.stderrMu.Lock()
	fmt.Fprintf(r.cfg.Stderr, format, args...)
	r.stderrMu.Unlock()
}

// Run executes cfg against target until the duration or transaction count
// is reached or ctx is cancelled (then in-flight transactions get
// cfg.StopGrace to finish, are cancelled, and the results so far are
// returned with Interrupted set). It returns ErrAborted with the results
// if clients were aborted by errors.
func Run(ctx context.Context, target Target, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = time.Second
	}
	counts := make([]int, len(cfg.Scripts))
	totalW := 0
	for i, s := range cfg.Scripts {
		counts[i] = len(s.Commands)
		totalW += s.Weight
	}
	counts = append(counts, cfg.Fallback.commandCounts()...)
	r := &run{cfg: &cfg, target: target, col: newCollector(shardCount(&cfg), len(cfg.Scripts)),
		cmds: newCommandRecorder(counts, cfg.PerCommand), totalW: totalW}
	r.active.Store(int32(cfg.Clients))
	if cfg.Shape != nil {
		n, rate := cfg.Shape(0)
		r.active.Store(int32(min(n, cfg.Clients)))
		r.rateAt.Store(math.Float64bits(rate))
	}
	if cfg.Pool > 0 {
		if cfg.PoolTimeout == 0 {
			cfg.PoolTimeout = 30 * time.Second
		}
		r.pool = newConnPool(cfg.Pool, target)
		r.col.withPoolWait()
	}

	// Open every client's session first, as pgbench does, so that the
	// benchmark clock measures only transactions.
	clients := make([]*client, cfg.Clients)
	for i := range clients {
		clients[i] = newClient(r, i)
	}
	// A pool's clients wait on each other, which only a Gate's do without
	// blocking a loop (gate_wait.go): a plain pool keeps goroutines.
	if _, ok := target.(LoopTarget); ok && (r.pool == nil || cfg.Gate != nil) && !cfg.Goroutines && cfg.Fallback.canLoop() {
		if err := r.makeLoops(clients); err != nil {
			return nil, err
		}
	}
	connStart := time.Now()
	if err := r.connectAll(ctx, clients); err != nil {
		r.closeLoops()
		return nil, err
	}
	connTime := time.Since(connStart)

	r.start = time.Now()
	if cfg.Duration > 0 {
		r.endUS = int64(cfg.Duration / time.Microsecond)
	}
	if cfg.Rate > 0 {
		r.startPacers(clients) // seed.go
	}

	totals := r.col.newInterval()
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	var wg sync.WaitGroup
	if r.loops != nil {
		raw, release := reserveLoopProcs(len(r.loops))
		defer release()
		for _, l := range r.loops {
			l.raw = raw
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.run(runCtx)
			}()
		}
	} else {
		for _, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.loop(runCtx)
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	interrupted := r.supervise(ctx, done, clients, totals, cancelRun)
	elapsed := time.Since(r.start)
	r.endOutage(elapsed, elapsed, false)

	spare := r.col.newInterval()
	r.col.drain(totals, spare)
	for i := range totals.Scripts {
		totals.Scripts[i].Commands = r.cmds.stats(i)
	}
	for _, c := range clients {
		if c.conn != nil && r.pool == nil {
			_ = c.conn.Close()
		}
		c.closeFallback()
	}
	if r.pool != nil {
		r.pool.close()
	}
	res := &Result{
		Elapsed:        elapsed,
		ConnTime:       connTime,
		Connections:    int64(cfg.Clients),
		Totals:         totals,
		AbortedClient:  int(r.aborted.Load()),
		Interrupted:    interrupted,
		Errors:         r.errorInfos(),
		Backoff:        time.Duration(r.backoffUS.Load()) * time.Microsecond,
		ReconnectWait:  time.Duration(r.reconnectUS.Load()) * time.Microsecond,
		RefusedClients: int(r.refusedClients.Load()),
	}
	for _, l := range r.loops {
		res.SendRing.Calls += l.ringStats.Calls
		res.SendRing.Requests += l.ringStats.Requests
		res.SendRing.Short += l.ringStats.Short
	}
	r.errMu.Lock()
	res.Outages = append([]Outage(nil), r.outages...)
	res.FallbackError = r.fallbackErr
	r.errMu.Unlock()
	if cfg.Connect {
		res.ConnTime = time.Duration(r.connTime.Load()) * time.Microsecond
		res.Connections = r.connCount.Load()
	}
	if r.failing != nil {
		return res, r.failing
	}
	if res.AbortedClient > 0 {
		return res, ErrAborted
	}
	return res, nil
}

func (cfg *Config) validate() error {
	switch {
	case len(cfg.Scripts) == 0:
		return errors.New("no script to run")
	case cfg.Clients < 1:
		return fmt.Errorf("number of clients must be at least 1, got %d", cfg.Clients)
	case cfg.Duration <= 0 && cfg.Transactions <= 0:
		return errors.New("set a duration or a number of transactions per client")
	case cfg.Duration > 0 && cfg.Transactions > 0:
		return errors.New("specify either a number of transactions (-t) or a duration (-T), not both")
	case cfg.MaxTries == 0 && cfg.Duration == 0 && cfg.LatencyLimit == 0:
		return errors.New("an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)")
	case cfg.Rate < 0:
		return fmt.Errorf("invalid rate %v", cfg.Rate)
	case cfg.Pool < 0:
		return fmt.Errorf("invalid pool size %d", cfg.Pool)
	case cfg.Pool > 0 && cfg.Connect:
		return errors.New("a pool and a new connection per transaction (-C) exclude each other")
	case cfg.FailureLimit.For < 0 || cfg.FailureLimit.For > 0 && (cfg.FailureLimit.Ratio <= 0 || cfg.FailureLimit.Ratio > 1):
		return fmt.Errorf("invalid failure limit: ratio %v for %v (want 0 < ratio ≤ 1)", cfg.FailureLimit.Ratio, cfg.FailureLimit.For)
	}
	for _, s := range cfg.Scripts {
		if len(s.Commands) == 0 {
			return fmt.Errorf("empty command list for script %q", s.Name)
		}
		if s.Weight < 0 {
			return fmt.Errorf("script %q: negative weight", s.Name)
		}
	}
	total := 0
	for _, s := range cfg.Scripts {
		total += s.Weight
	}
	if total == 0 {
		return errors.New("total script weight must not be zero")
	}
	if cfg.Fallback != nil {
		return cfg.Fallback.validate(len(cfg.Scripts))
	}
	return nil
}

// shardCount is how many collector shards a run has. Goroutine clients
// spread over a few; an event loop's clients all record into the loop's
// own (makeLoops), so that no two loops share a shard's lock and
// interval, whose cache lines would bounce between their cores on every
// transaction.
func shardCount(cfg *Config) int {
	return max(min(2*runtime.GOMAXPROCS(0), cfg.Clients), min(max(cfg.Threads, 1), cfg.Clients))
}

// makeLoops divides the clients among Threads event loops, in contiguous
// blocks as pgbench divides them among its threads.
func (r *run) makeLoops(clients []*client) error {
	n := min(max(r.cfg.Threads, 1), len(clients))
	dealt := 0
	for t := range n {
		l, err := newEventLoop(r)
		if err == nil && r.cfg.Gate != nil {
			if err = l.newLoopWaker(); err != nil {
				syscall.Close(l.ep)
			}
		}
		if err != nil {
			r.closeLoops()
			return fmt.Errorf("event loop: %w", err)
		}
		r.loops = append(r.loops, l)
		// pgbench's blocks: the earlier threads take the larger ones (5
		// clients on 2: 0-2, 3-4), as script.ThreadOf, so that a loop's
		// clients share one thread's script chooser and --rate pacer.
		size := (len(clients) - dealt + n - t - 1) / (n - t)
		for _, c := range clients[dealt : dealt+size] {
			l.add(c)
			c.shard = &r.col.shards[t]
		}
		dealt += size
	}
	return nil
}

// closeLoops gives up the event loops before they ran: the clients get
// goroutines of their own.
func (r *run) closeLoops() {
	for _, l := range r.loops {
		for _, c := range l.clients {
			c.ls = nil
			c.shard = r.col.shardFor(c.id)
		}
		if l.wake != nil {
			l.wake.close()
		}
		syscall.Close(l.ep)
	}
	r.loops = nil
	if r.pool != nil {
		r.pool.loop = nil
	}
}

// retryLater reports whether a failed attempt to open a session leaves
// the client to retry in its loop (ContinueOnError: the server refused it
// or could not be reached) rather than failing the run.
func (r *run) retryLater(err error) bool {
	return r.cfg.ContinueOnError && !r.cfg.Connect && connectFault(err) != NoFault
}

// connectAll opens the clients' sessions, a few at a time. A session the
// server refuses is left to the client's loop to retry (retryLater);
// another error fails the run.
func (r *run) connectAll(ctx context.Context, clients []*client) error {
	sem := make(chan struct{}, 16)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	if r.pool != nil {
		if r.loops != nil {
			r.pool.loop, _ = r.target.(LoopTarget)
		}
		err := r.pool.fill(ctx, r.retryLater)
		if errors.Is(err, ErrNoLoop) { // sessions cannot run on a loop
			r.closeLoops()
			err = r.pool.fill(ctx, r.retryLater)
		}
		return err
	}
	active := int(r.active.Load())
	if r.loops != nil {
		// The first session says whether sessions can run on a loop.
		conn, err := clients[0].connect(ctx)
		if errors.Is(err, ErrNoLoop) {
			r.closeLoops()
			conn, err = clients[0].connect(ctx)
		}
		if err != nil && r.retryLater(err) {
			// Refused: whether sessions can run on a loop is unknown,
			// so every client gets a goroutine and retries there.
			r.closeLoops()
			conn, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("client 0: %w", err)
		}
		switch {
		case conn == nil:
		case r.cfg.Connect || active == 0:
			_ = conn.Close()
		default:
			clients[0].conn = conn
		}
	}
	for i := range clients {
		if r.cfg.Connect || i >= active || clients[i].conn != nil {
			continue // connects when it becomes active
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(c *client) {
			defer wg.Done()
			defer func() { <-sem }()
			conn, err := c.connect(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && r.retryLater(err) {
				return // the client retries in its loop, where it is counted
			}
			if err != nil {
				if first == nil {
					first = fmt.Errorf("client %d: %w", c.id, err)
				}
				return
			}
			c.conn = conn
		}(clients[i])
	}
	wg.Wait()
	if first != nil {
		for _, c := range clients {
			if c.conn != nil {
				_ = c.conn.Close()
			}
		}
		return first
	}
	return nil
}

// supervise ticks progress, ends the run at its duration, and on
// cancellation stops clients, interrupting what does not finish in time.
// It returns whether the caller's context interrupted the run.
func (r *run) supervise(ctx context.Context, done <-chan struct{}, clients []*client, totals *Interval, cancelRun context.CancelFunc) bool {
	var tick <-chan time.Time
	var progressIv, spare *Interval
	if r.cfg.OnProgress != nil && (r.cfg.Progress > 0 || r.cfg.Ticks != nil) {
		if r.cfg.Ticks != nil {
			tick = r.cfg.Ticks
		} else {
			t := time.NewTicker(r.cfg.Progress)
			defer t.Stop()
			tick = t.C
		}
		progressIv = r.col.newInterval()
		spare = r.col.newInterval()
	}
	var shapeTick <-chan time.Time
	if r.cfg.Shape != nil {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		shapeTick = t.C
	}
	var watch *failureWatch
	var watchTick <-chan time.Time
	if r.cfg.FailureLimit.For > 0 {
		watch = newFailureWatch(r.cfg.FailureLimit)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		watchTick = t.C
	}
	var endTimer <-chan time.Time
	if r.cfg.Duration > 0 {
		t := time.NewTimer(r.cfg.Duration)
		defer t.Stop()
		endTimer = t.C
	}
	lastTick, period := time.Duration(0), r.cfg.Progress
	// report closes the interval from the last tick to elapsed.
	// The shape and the clients waiting for a connection as the load
	// ended: the last interval, reported once the clients have stopped,
	// gives these rather than the stopped clients' (stopAt marks them).
	final := r.cfg.FinalProgress && progressIv != nil
	var ended *Progress
	stopAt := func() {
		if final && ended == nil {
			ended = &Progress{Clients: int(r.active.Load()), Rate: math.Float64frombits(r.rateAt.Load()), Unconnected: int(r.unconnected.Load())}
		}
	}
	report := func(now time.Time, elapsed time.Duration) {
		spare = r.col.drain(progressIv, spare)
		progressIv.Start, progressIv.End = int64(lastTick/time.Microsecond), int64(elapsed/time.Microsecond)
		p := &Progress{Time: now, Elapsed: elapsed, Span: elapsed - lastTick, Interval: progressIv,
			Clients: int(r.active.Load()), Rate: math.Float64frombits(r.rateAt.Load()),
			Unconnected: int(r.unconnected.Load()), OldestInFlight: oldestInFlight(clients, int64(elapsed/time.Microsecond))}
		if ended != nil {
			p.Clients, p.Rate, p.Unconnected = ended.Clients, ended.Rate, ended.Unconnected
		}
		if r.cfg.Shape == nil {
			p.Rate = r.cfg.Rate
		}
		r.cfg.OnProgress(p)
		totals.Merge(progressIv)
		progressIv.reset()
		lastTick = elapsed
	}
	interrupted := false
	var graceTimer <-chan time.Time
	hard := false
	ctxDone := ctx.Done()
	for {
		select {
		case <-done:
			if now := time.Now(); final && now.Sub(r.start) > lastTick {
				report(now, now.Sub(r.start))
			}
			return interrupted
		case now := <-shapeTick:
			n, rate := r.cfg.Shape(now.Sub(r.start))
			r.active.Store(int32(min(n, r.cfg.Clients)))
			r.rateAt.Store(math.Float64bits(rate))
		case now := <-tick:
			elapsed := now.Sub(r.start)
			if r.cfg.Ticks != nil && elapsed > lastTick {
				period = elapsed - lastTick // the shared clock's period, as seen
			}
			if final && (r.stopping.Load() || r.cfg.Duration > 0 && elapsed >= r.cfg.Duration-period/2) {
				stopAt()
				continue // the last interval ends when the clients have stopped
			}
			report(now, elapsed)
		case <-watchTick:
			if !watch.poll(r.nowUS(), clients) {
				continue
			}
			stopAt()
			r.stopFailing(watch.failed)
			watchTick, endTimer = nil, nil
			r.stopping.Store(true)
			cancelRun()
			graceTimer = time.After(r.cfg.StopGrace)
		case <-endTimer:
			stopAt()
			r.stopping.Store(true)
			cancelRun() // wakes clients waiting on the schedule or in \sleep
			endTimer = nil
			// A transaction still running long after the end (a lock
			// wait, a hung server) must not hang the run. A stop already
			// under way (the context cancelled just before the end)
			// keeps its shorter grace.
			if graceTimer == nil {
				graceTimer = time.After(30 * time.Second)
			}
		case <-ctxDone:
			stopAt()
			interrupted = true
			r.stopping.Store(true)
			cancelRun()
			ctxDone = nil
			graceTimer = time.After(r.cfg.StopGrace)
		case <-graceTimer:
			if hard {
				r.hardStop.Store(true) // wakes clients waiting on an event loop
			}
			for _, c := range clients {
				c.interrupt(hard)
			}
			if hard {
				graceTimer = nil
				continue
			}
			hard = true
			graceTimer = time.After(3 * time.Second)
		}
	}
}

// noteConnectError counts a failed attempt to open a connection and,
// when the server is unavailable, starts an outage if none is open; it
// returns the error's code.
func (r *run) noteConnectError(err error, si int) string {
	code := r.noteError(err, si, -1)
	if connectFault(err) != Unavailable {
		return code // the server is up: refused (at its connection limit), or another error
	}
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if !r.outageOpen.Load() {
		now := time.Since(r.start)
		r.outages = append(r.outages, Outage{Start: now, Code: code, Message: err.Error(), Failures: 1,
			Codes: map[string]int64{code: 1}, lastFail: now})
		r.outageOpen.Store(true)
		if r.cfg.OnOutage != nil { // under the lock: its end cannot be told first
			r.cfg.OnOutage(r.outages[len(r.outages)-1])
		}
	}
	return code
}

// noteError counts one failed try's error and returns its code; si and
// cmd say where it happened (cmd -1: in no command).
func (r *run) noteError(err error, si, cmd int) string {
	code, detail := CodeClient, ""
	var dbe *DBError
	if errors.As(err, &dbe) {
		code, detail = dbe.Code, dbe.Detail
	}
	now := time.Since(r.start)
	conn := FaultOf(err) != NoFault
	r.errMu.Lock()
	defer r.errMu.Unlock()
	info := r.errs[code]
	if info == nil {
		if r.errs == nil {
			r.errs = make(map[string]*ErrorInfo)
		}
		info = &ErrorInfo{Code: code, Message: err.Error(), Detail: detail, First: now, Script: si, Command: cmd}
		r.errs[code] = info
		r.errSeq = append(r.errSeq, code)
	}
	info.Count++
	info.Last = now
	if !conn {
		r.lastFailure = ErrorInfo{Code: code, Message: err.Error(), Script: si, Command: cmd}
	}
	if r.outageOpen.Load() {
		o := &r.outages[len(r.outages)-1]
		o.Failures++
		o.Codes[code]++
		o.lastFail = now
	}
	return code
}

// endOutage closes the open outage, if any, at now: a transaction begun
// after its last failure succeeded (recovered), or the run ended.
func (r *run) endOutage(begun, now time.Duration, recovered bool) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if !r.outageOpen.Load() || recovered && begun <= r.outages[len(r.outages)-1].lastFail {
		return
	}
	r.outageOpen.Store(false)
	o := &r.outages[len(r.outages)-1]
	o.End, o.Recovered = max(now, o.Start), recovered
	if r.cfg.OnOutage != nil {
		r.cfg.OnOutage(*o)
	}
}

// failureWatch applies Config.FailureLimit: the supervisor feeds it the
// clients' counts every poll, and it closes one-second windows.
type failureWatch struct {
	limit                FailureLimit
	windows              int   // one-second windows in limit.For
	streak               int   // trailing windows in which transactions kept failing
	next                 int64 // end of the current window, µs since the start
	ok, failed, measured int64 // counts at the last window's end
}

func newFailureWatch(limit FailureLimit) *failureWatch {
	return &failureWatch{limit: limit, windows: max(1, int((limit.For+time.Second-1)/time.Second)), next: int64(time.Second / time.Microsecond)}
}

// poll closes the windows that ended by nowUS and reports whether the
// limit is reached.
func (w *failureWatch) poll(nowUS int64, clients []*client) bool {
	if nowUS < w.next {
		return false
	}
	var ok, failed, measured int64
	for _, c := range clients {
		ok += c.okTx.Load()
		failed += c.failedTx.Load()
		measured += c.measuredFailedTx.Load()
	}
	dOK, dFailed, dMeasured := ok-w.ok, failed-w.failed, measured-w.measured
	w.ok, w.failed, w.measured = ok, failed, measured
	// Windows that passed without a poll (a stalled supervisor) count as
	// one: what ended in them is known only in sum.
	for w.next <= nowUS {
		w.next += int64(time.Second / time.Microsecond)
	}
	if dFailed > dMeasured && float64(dFailed) >= w.limit.Ratio*float64(dOK+dFailed) {
		w.streak++
	} else {
		w.streak = 0
	}
	return w.streak >= w.windows
}

// stopFailing records why the run is being stopped by its failure limit.
func (r *run) stopFailing(failed int64) {
	r.errMu.Lock()
	last := r.lastFailure
	r.errMu.Unlock()
	r.failing = &FailingError{Limit: r.cfg.FailureLimit, Code: last.Code, Message: last.Message,
		Script: last.Script, Command: last.Command, Failed: failed, At: time.Since(r.start)}
}

// errorInfos lists the errors seen, in order of first occurrence.
func (r *run) errorInfos() []ErrorInfo {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	out := make([]ErrorInfo, 0, len(r.errSeq))
	for _, code := range r.errSeq {
		out = append(out, *r.errs[code])
	}
	return out
}
