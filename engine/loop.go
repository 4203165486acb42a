package engine

import (
	"context"
	"errors"
	"iter"
	"math"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"github.com/firedrill/firedrill/engine/sockio"
)

// The event loop is how the engine keeps up with pgbench. pgbench serves
// its clients round-robin from one thread: it sends a query, polls every
// client's socket at once and handles whichever answered, so a
// transaction costs about two system calls and no context switch. Go's
// netpoller, with a goroutine per client, reads each reply too early
// (EAGAIN), parks the goroutine, polls, and wakes it through the
// scheduler: on a 2-core machine shared with the server that doubled the
// client's CPU per transaction and cost 20–30 % of the throughput.
//
// Here each -j thread is one goroutine running an epoll loop, and each of
// its clients is a coroutine (iter.Pull): the client's code stays the
// straight-line transaction logic of client.go, and where it would block —
// a reply not yet there, a \sleep, the -R schedule — it yields to the loop,
// which resumes it when epoll says its socket is readable or its time
// came. Switching coroutines is a direct handoff on the same thread, and
// the sockets are read and written with raw system calls, so the Go
// runtime adds nothing per transaction.
//
// A LoopTarget's sessions do their own I/O on a raw file descriptor and
// call the Poller (the client) when they must wait. Runs with an
// application pool, whose clients wait on each other, keep a goroutine per
// client, as do targets that cannot run on a loop (a TLS session).

// Poller parks a client running on an event loop until its session's
// socket is ready. Sessions of a LoopTarget call it from the client's own
// coroutine; it is the socket layer's (engine/sockio), which the clients'
// sessions are built on.
type Poller = sockio.Poller

// LoopTarget is a Target whose sessions can run on an event loop.
type LoopTarget interface {
	Target
	// ConnectLoop opens a client's session whose waits go through p. It
	// may block (as pgbench's connect does). It returns ErrNoLoop when the
	// session cannot do raw I/O (TLS); the run then uses goroutines.
	ConnectLoop(ctx context.Context, clientID int, p Poller) (Conn, error)
}

// ErrNoLoop says a session cannot run on an event loop.
var ErrNoLoop = errors.New("session cannot run on an event loop")

// errHardStop is what a session waiting on its socket gets when the run
// is stopped hard (a transaction still running well after the end).
var errHardStop = errors.New("run stopped: command interrupted")

// eventLoop runs one thread's clients.
type eventLoop struct {
	r       *run
	ep      int
	clients []*client
	evs     []syscall.EpollEvent
	live    int
	// sleepers counts the clients sleeping (loopState.until set), so
	// that a wakeup looks for due sleepers only when there are some: with
	// 1,000 clients waiting on their sockets, a scan of them all after
	// every poll was the loop's own largest cost.
	sleepers int
	// nextDue is when the earliest sleeper is due (µs since the start)
	// or earlier, never later: set by sleep, recomputed by the sweep of
	// sleepers, which runs only once it has come. Every HTTP request in
	// flight sleeps until its timeout, so a sweep and a timeout() scan of
	// all clients per turn were the loop's cost with no sleeper due.
	nextDue int64
	pwait2  bool // epoll_pwait2 (ns timeouts) works
	// raw makes the blocking poll a raw system call (see syscall).
	raw     bool
	ready   bool // the last poll found sockets ready
	done    bool // the loop has returned: waits block on poll(2)
	running *client
	// wake, with a Gate, resumes parked clients from other goroutines
	// (gate_wait.go); owner is the client whose registration each fd's
	// is, for sessions that move between clients (register).
	wake  *loopWaker
	owner []*client
	// ring holds the turn's small requests and sends them together
	// (uring.go); nil without io_uring. finish are the clients whose
	// held request did not all go, resumed to finish it.
	ring      *sendRing
	holding   bool // the turn's requests go to the ring
	finish    []*client
	ringStats SendRingStats // the ring's counts, once it is closed
}

// Hold implements sockio.Holder: a request of the client running on its
// loop waits in the loop's send ring until the turn ends.
func (c *client) Hold(conn *sockio.Conn, b []byte) bool {
	ls := c.ls
	if ls == nil || !ls.lp.holding || ls.lp.done || ls.lp.running != c {
		return false
	}
	return ls.lp.ring.hold(c, conn, b)
}

// SendHeld implements sockio.Holder.
func (c *client) SendHeld() {
	ls := c.ls
	if ls == nil || ls.lp.ring == nil || ls.lp.running != c {
		return
	}
	ls.lp.sendHeld()
}

// sendHeld sends the held requests and notes the clients whose request
// did not all go, for resumeUnfinished.
func (l *eventLoop) sendHeld() {
	for _, h := range l.ring.send() {
		l.finish = append(l.finish, h.c)
	}
}

// resumeUnfinished resumes the clients waiting for a reply to a request
// that did not all go: their Fill finishes it.
func (l *eventLoop) resumeUnfinished() {
	for len(l.finish) > 0 {
		c := l.finish[len(l.finish)-1]
		l.finish = l.finish[:len(l.finish)-1]
		if !c.ls.ended && c.ls.waitFD >= 0 {
			l.resume(c)
		}
	}
}

// loopState is a client's place on its event loop.
type loopState struct {
	lp     *eventLoop
	index  int // in lp.clients; the epoll data of its fd
	next   func() (struct{}, bool)
	stop   func()
	yield  func(struct{}) bool
	waitFD int   // fd the client waits on, -1 = none
	write  bool  // waiting for writability
	until  int64 // sleeping until (µs since start), -1 = not sleeping
	regFD  int   // fd registered in epoll, -1 = none
	regEv  uint32
	regGen uint64 // the pooled session registered (client.connGen), 0 = the client's own
	ended  bool
	parked bool // in a Gate's Park (gate_wait.go)
}

const (
	sysEpollPwait2 = 441 // linux/amd64 and arm64
	loopTick       = 10 * time.Millisecond
)

func newEventLoop(r *run) (*eventLoop, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &eventLoop{r: r, ep: ep, evs: make([]syscall.EpollEvent, 128), pwait2: true, nextDue: math.MaxInt64}, nil
}

func (l *eventLoop) add(c *client) {
	c.ls = &loopState{lp: l, index: len(l.clients), waitFD: -1, until: -1, regFD: -1}
	l.clients = append(l.clients, c)
}

// run drives the loop's clients until every one has finished, on an OS
// thread of its own (as each pgbench thread is one): the loop and its
// clients' coroutines never move to another thread, so the kernel sees
// one steady thread per -j that it schedules and wakes as pgbench's, and
// its caches stay warm. Unlocked, the runtime's preemption (every 10 ms
// of what it sees as a goroutine running) let the spare P's thread take
// the loop over: at -j 2 the two loops' work was spread over three
// threads.
func (l *eventLoop) run(ctx context.Context) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if sendRingOn {
		l.ring = newSendRing()
		l.holding = l.ring != nil && ringHoldsAll
	}
	defer func() {
		if l.ring != nil {
			l.sendHeld()
			l.ringStats = SendRingStats{Calls: l.ring.enters, Requests: l.ring.sent, Short: l.ring.shortSends}
			l.ring.close()
			l.ring = nil
		}
		l.done = true
		for _, c := range l.clients {
			if c.ls.stop != nil {
				c.ls.stop()
			}
			c.ls.regFD = -1
		}
		if l.wake != nil {
			l.wake.close()
		}
		syscall.Close(l.ep)
	}()
	for _, c := range l.clients {
		ls := c.ls
		ls.next, ls.stop = iter.Pull(func(yield func(struct{}) bool) {
			ls.yield = yield
			c.loop(ctx)
		})
		l.live++
		l.resume(c)
	}
	r := l.r
	for l.live > 0 {
		if l.ring != nil {
			for len(l.ring.held) > 0 || len(l.finish) > 0 {
				l.sendHeld()
				l.resumeUnfinished()
			}
		}
		timeout := l.timeout()
		n := l.wait(timeout)
		// A turn of one reply writes its request at once: a ring call
		// carrying one request costs more than the write (tpcb-like,
		// whose turns mostly carry one, spent ~3 µs more per transaction).
		l.holding = l.ring != nil && (n > 1 || ringHoldsAll)
		for _, ev := range l.evs[:n] {
			if ev.Fd == wakeIndex {
				l.wake.ack()
				continue
			}
			c := l.clients[ev.Fd]
			ls := c.ls
			if ls.waitFD >= 0 && ls.waitFD == ls.regFD {
				l.resume(c)
				continue
			}
			// Ready while the client is not waiting for it (a notice, or
			// the server closing the session while the client sleeps):
			// stop watching until it waits again, or level-triggered
			// epoll would spin. Removed, not just masked: a hang-up is
			// reported even for a descriptor watched for nothing.
			l.unregister(c)
		}
		l.holding = l.ring != nil && ringHoldsAll
		if l.wake != nil && l.wake.pending.Load() > 0 {
			l.resumeWoken()
		}
		hard := r.hardStop.Load()
		if l.sleepers == 0 && !hard {
			continue
		}
		now := r.nowUS()
		stopping := r.stopping.Load() || ctx.Err() != nil
		if now < l.nextDue && !stopping && !hard {
			continue
		}
		l.nextDue = math.MaxInt64
		for _, c := range l.clients {
			ls := c.ls
			switch {
			case ls.ended:
			case ls.until >= 0 && (ls.until <= now || stopping):
				l.resume(c)
			case ls.waitFD >= 0 && hard:
				l.resume(c)
			}
			if ls.until >= 0 {
				l.nextDue = min(l.nextDue, ls.until)
			}
		}
	}
}

// sleep counts ls's client as sleeping until untilUS (µs since the
// start), for the loop's sweep of sleepers; the client then yields.
func (l *eventLoop) sleep(ls *loopState, untilUS int64) {
	ls.until = untilUS
	l.sleepers++
	l.nextDue = min(l.nextDue, untilUS)
}

// timeout is how long the loop may wait: until the earliest sleeper
// (nextDue), at most loopTick (so that stopping is noticed), in nanoseconds.
func (l *eventLoop) timeout() int64 {
	t := int64(loopTick)
	if l.sleepers == 0 {
		return t
	}
	if left := l.nextDue - l.r.nowUS(); left < t/1000 { // µs, compared before ×1000
		t = max(left*1000, 0)
	}
	return t
}

// wait polls for ready sockets, blocking at most timeoutNS. After a poll
// that found sockets ready it first asks without blocking: under
// select-only load a socket is nearly always ready, and the moment the
// ask takes is often enough for a reply to arrive, which spares the loop
// a sleep and a wakeup (without the ask, a select-only transaction took
// 2.4 system calls instead of 2.6 but about 10 % more context switches,
// and no less CPU). After a poll that found none (slow statements,
// commits) the ask would be a wasted call, so it blocks at once.
func (l *eventLoop) wait(timeoutNS int64) int {
	evs := uintptr(unsafe.Pointer(&l.evs[0]))
	if l.ready {
		// epoll_pwait without a signal mask is epoll_wait, which arm64 lacks.
		n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.ep), evs, uintptr(len(l.evs)), 0, 0, 0)
		if errno == 0 && n > 0 {
			return int(n)
		}
		l.ready = false
	}
	if timeoutNS == 0 {
		return 0
	}
	if l.wake != nil {
		if !l.wake.mayBlock() {
			return 0
		}
		defer l.wake.blocking.Store(false)
	}
	n := l.block(evs, timeoutNS)
	l.ready = n > 0
	return n
}

// block waits for ready sockets at most timeoutNS.
func (l *eventLoop) block(evs uintptr, timeoutNS int64) int {
	if l.pwait2 {
		ts := syscall.NsecToTimespec(timeoutNS)
		n, errno := l.syscall(sysEpollPwait2, uintptr(l.ep), evs, uintptr(len(l.evs)), uintptr(unsafe.Pointer(&ts)))
		if errno != syscall.ENOSYS {
			if errno != 0 {
				return 0
			}
			return int(n)
		}
		l.pwait2 = false // before Linux 5.11: millisecond timeouts
	}
	ms := (timeoutNS + 999_999) / 1_000_000
	// epoll_pwait without a signal mask is epoll_wait, which arm64 lacks.
	n, errno := l.syscall(syscall.SYS_EPOLL_PWAIT, uintptr(l.ep), evs, uintptr(len(l.evs)), uintptr(ms))
	if errno != 0 {
		return 0
	}
	return int(n)
}

// syscall makes the loop's blocking system call. A raw one, which the Go
// runtime does not see, lets the loop keep its P while it waits: no
// thread hand-off and no sysmon waking to retake it (see
// reserveLoopProcs, which leaves a P beside the loops for the rest of the
// program); a signal (GC, preemption) ends the wait early. Only when the
// user fixed GOMAXPROCS too low for that does the loop wait in an
// ordinary system call, whose P the runtime can hand to the rest.
func (l *eventLoop) syscall(trap, a1, a2, a3, a4 uintptr) (uintptr, syscall.Errno) {
	if l.raw {
		n, _, errno := syscall.RawSyscall6(trap, a1, a2, a3, a4, 0, 0)
		return n, errno
	}
	n, _, errno := syscall.Syscall6(trap, a1, a2, a3, a4, 0, 0)
	return n, errno
}

func (l *eventLoop) resume(c *client) {
	ls := c.ls
	if ls.until >= 0 {
		l.sleepers--
	}
	ls.waitFD, ls.until = -1, -1
	l.running = c
	if _, ok := ls.next(); !ok {
		ls.ended = true
		l.live--
		l.unregister(c)
	}
	l.running = nil
}

func (l *eventLoop) ctl(op, fd int, events uint32, index int) error {
	return syscall.EpollCtl(l.ep, op, fd, &syscall.EpollEvent{Events: events, Fd: int32(index)})
}

// WaitRead implements Poller.
func (c *client) WaitRead(fd int) error { return c.waitFD(fd, false) }

// WaitWrite implements Poller.
func (c *client) WaitWrite(fd int) error { return c.waitFD(fd, true) }

func (c *client) waitFD(fd int, write bool) error {
	ls := c.ls
	if ls.lp.done || ls.yield == nil || ls.lp.running != c {
		// Outside the loop (closing sessions after the run, or while
		// connecting before it): block in poll(2), briefly.
		return sockio.Poll(fd, write, 5*time.Second)
	}
	if c.r.hardStop.Load() {
		return errHardStop
	}
	ev := uint32(syscall.EPOLLIN)
	if write {
		ev = syscall.EPOLLOUT
	}
	switch {
	case ls.regFD != fd || ls.regGen != c.connGen:
		if err := ls.lp.register(c, fd, ev); err != nil {
			return err
		}
	case ls.regEv != ev:
		if err := ls.lp.ctl(syscall.EPOLL_CTL_MOD, fd, ev, ls.index); err != nil {
			return err
		}
		ls.regEv = ev
	}
	ls.waitFD, ls.write = fd, write
	if !ls.yield(struct{}{}) {
		return errHardStop
	}
	if c.r.hardStop.Load() {
		return errHardStop
	}
	return nil
}

// Forget implements Poller.
func (c *client) Forget(fd int) {
	ls := c.ls
	if ls.regFD == fd {
		if !ls.lp.done {
			ls.lp.unregister(c)
		}
		ls.regFD = -1
	}
}

// loopSleep parks the client until the given time (µs since the start)
// or until the run stops; it reports whether the time came.
func (c *client) loopSleep(ctx context.Context, untilUS int64) bool {
	ls := c.ls
	if ls.lp.running != c {
		time.Sleep(time.Duration(untilUS-c.r.nowUS()) * time.Microsecond)
		return ctx.Err() == nil
	}
	ls.lp.sleep(ls, untilUS)
	if !ls.yield(struct{}{}) {
		return false
	}
	return !c.r.stopping.Load() && ctx.Err() == nil
}
