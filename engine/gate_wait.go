package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/firedrill/firedrill/engine/sockio"
)

// A Gate's waits (a request in the accept queue, its CPU phase, a
// retry's backoff, a full pool or bulkhead) are the client's Park: on an
// event loop the client's coroutine yields and the loop resumes it when
// another client, on any loop, or a timer calls its Wake, or when its
// deadline comes (as a sleeper); with a goroutine of its own it waits on
// a channel. So a run through a Gate keeps the event loops, whose client
// CPU per transaction is about half a goroutine's, and a Gate written
// once behaves the same on both.

// wakeIndex is the epoll data of a loop's wake-up eventfd (clients have
// their index, ≥ 0).
const wakeIndex = -1

// loopWaker lets other goroutines resume a loop's parked clients: they
// put the client on the list and, if the loop is blocked in epoll, write
// to its eventfd. The loop takes the list after every poll in which it
// is not empty, and checks it before it blocks (blocking, then pending:
// a waker that added after the check sees blocking set and signals).
type loopWaker struct {
	fd       int
	blocking atomic.Bool
	pending  atomic.Int32 // len(woken), changed under mu
	signaled atomic.Bool  // the eventfd was written and not read yet

	mu     sync.Mutex
	woken  []*client
	spare  []*client
	closed bool
}

// newLoopWaker makes l's eventfd and watches it.
func (l *eventLoop) newLoopWaker() error {
	const efdCloexec, efdNonblock = 0x80000, 0x800
	fd, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, efdCloexec|efdNonblock, 0)
	if errno != 0 {
		return errno
	}
	if err := syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, int(fd), &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: wakeIndex}); err != nil {
		syscall.Close(int(fd))
		return err
	}
	l.wake = &loopWaker{fd: int(fd)}
	return nil
}

// push asks the loop to resume c.
func (w *loopWaker) push(c *client) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.woken = append(w.woken, c)
	w.pending.Add(1)
	if w.blocking.Load() && w.signaled.CompareAndSwap(false, true) {
		one := uint64(1)
		syscall.Write(w.fd, (*[8]byte)(unsafe.Pointer(&one))[:])
	}
}

// mayBlock says the loop may block now: no wake-up is pending.
func (w *loopWaker) mayBlock() bool {
	w.blocking.Store(true)
	if w.pending.Load() > 0 {
		w.blocking.Store(false)
		return false
	}
	return true
}

// ack reads the eventfd after it fired. Read first, then cleared: a
// waker in between does not signal, and its client is on the list the
// loop takes before it blocks again.
func (w *loopWaker) ack() {
	var buf [8]byte
	syscall.Read(w.fd, buf[:])
	w.signaled.Store(false)
}

func (w *loopWaker) close() {
	w.mu.Lock()
	w.closed = true
	w.woken = nil
	w.mu.Unlock()
	syscall.Close(w.fd)
}

// resumeWoken resumes the woken clients that are parked (a client woken
// before it parked finds its token in Park instead).
func (l *eventLoop) resumeWoken() {
	w := l.wake
	w.mu.Lock()
	list := w.woken
	w.woken, w.spare = w.spare[:0], list
	w.pending.Store(0)
	w.mu.Unlock()
	for i, c := range list {
		list[i] = nil
		if !c.ls.ended && c.ls.parked {
			l.resume(c)
		}
	}
}

// noDeadline is a parked client's sleep time when its Park has no
// deadline: it counts as a sleeper, so that the loop resumes it when the
// run stops.
const noDeadline = int64(1) << 50 // µs: 35 years, and ×1000 (ns) does not overflow

// park waits for wake, the deadline (zero: none) or the run's stop;
// false if the run stops.
func (c *client) park(ctx context.Context, deadline time.Time) bool {
	if c.wakeToken.Swap(false) {
		return ctx.Err() == nil
	}
	if ls := c.ls; ls != nil && !ls.lp.done && ls.yield != nil && ls.lp.running == c {
		until := int64(noDeadline)
		if !deadline.IsZero() {
			until = int64(deadline.Sub(c.r.start) / time.Microsecond)
			if until <= c.r.nowUS() {
				return ctx.Err() == nil
			}
		}
		ls.lp.sleep(ls, until)
		ls.parked = true
		ok := ls.yield(struct{}{})
		ls.parked = false
		c.wakeToken.Store(false) // the caller checks what it waited for
		return ok && !c.r.stopping.Load() && ctx.Err() == nil
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return ctx.Err() == nil
		}
		if c.parkTimer == nil {
			c.parkTimer = time.NewTimer(d)
		} else {
			c.parkTimer.Reset(d)
		}
		defer c.parkTimer.Stop()
		timeout = c.parkTimer.C
	}
	select {
	case <-c.wakeCh:
	case <-timeout:
	case <-ctx.Done():
	}
	c.wakeToken.Store(false)
	return ctx.Err() == nil
}

// wake ends c's park (or its next one), from any goroutine.
func (c *client) wake() {
	if c.wakeToken.Swap(true) {
		return // a wake-up is on its way
	}
	if c.ls != nil {
		c.ls.lp.wake.push(c)
		return
	}
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
}

// slotPoller is a pooled session's Poller on the event loops: the
// session's waits go to the client that borrowed it (the connection
// moves between clients, and between loops), and before it is borrowed
// (the pool filled before the run, closed after it) to poll(2).
type slotPoller struct {
	cur *client // the borrower; set and cleared under the pool's hand-over
}

var _ DeadlinePoller = (*slotPoller)(nil)

func (p *slotPoller) WaitRead(fd int) error {
	if p.cur == nil {
		return sockio.Poll(fd, false, 5*time.Second)
	}
	return p.cur.WaitRead(fd)
}

func (p *slotPoller) WaitWrite(fd int) error {
	if p.cur == nil {
		return sockio.Poll(fd, true, 5*time.Second)
	}
	return p.cur.WaitWrite(fd)
}

func (p *slotPoller) WaitReadUntil(fd int, deadline time.Time) error {
	if p.cur == nil {
		return sockio.Blocking{Deadline: deadline}.WaitRead(fd)
	}
	return p.cur.WaitReadUntil(fd, deadline)
}

func (p *slotPoller) Forget(fd int) {
	if p.cur != nil {
		p.cur.Forget(fd)
	}
}

// register makes fd's registration on the loop c's (for ev), in place of
// c's last one. A pooled session moves between clients: a client of the
// loop that used it before may still hold its registration, which is
// then taken over (a client's registration outlives its borrow, so that
// a client that gets the same session back makes no epoll call).
func (l *eventLoop) register(c *client, fd int, ev uint32) error {
	ls := c.ls
	l.unregister(c)
	if fd >= len(l.owner) {
		l.owner = append(l.owner, make([]*client, fd+1-len(l.owner))...)
	}
	var err error = syscall.ENOENT
	if o := l.owner[fd]; o != nil && o != c {
		o.ls.regFD = -1
		err = l.ctl(syscall.EPOLL_CTL_MOD, fd, ev, ls.index)
	}
	if err == syscall.ENOENT { // none, or it went with a closed file
		err = l.ctl(syscall.EPOLL_CTL_ADD, fd, ev, ls.index)
		if err == syscall.EEXIST {
			err = l.ctl(syscall.EPOLL_CTL_MOD, fd, ev, ls.index)
		}
	}
	if err != nil {
		l.owner[fd] = nil
		return err
	}
	l.owner[fd] = c
	ls.regFD, ls.regEv, ls.regGen = fd, ev, c.connGen
	return nil
}

// unregister drops c's registration, unless another client of the loop
// took it over.
func (l *eventLoop) unregister(c *client) {
	ls := c.ls
	fd := ls.regFD
	if fd < 0 {
		return
	}
	ls.regFD = -1
	if fd < len(l.owner) && l.owner[fd] != c {
		return
	}
	l.ctl(syscall.EPOLL_CTL_DEL, fd, 0, ls.index)
	if fd < len(l.owner) {
		l.owner[fd] = nil
	}
}

// acquireSlot borrows a pooled connection. On a loop the pool is a
// Gate's, which bounds the sessions its calls hold to the pool's size, so
// a slot is free; were none, the client would look again every
// millisecond rather than block the loop.
func (c *client) acquireSlot(ctx context.Context) (*poolSlot, error) {
	r := c.r
	if c.ls == nil {
		return r.pool.acquire(ctx, r.cfg.PoolTimeout, &c.timer)
	}
	deadline := r.nowUS() + int64(r.cfg.PoolTimeout/time.Microsecond)
	for {
		select {
		case s := <-r.pool.slots:
			return s, nil
		default:
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.nowUS() >= deadline {
			return nil, errPoolTimeout
		}
		c.sleep(ctx, time.Millisecond)
	}
}

// connectSlot opens the session of the pooled slot the client borrowed.
func (c *client) connectSlot(ctx context.Context, s *poolSlot) (Conn, error) {
	if c.r.pool.loop != nil {
		return c.r.pool.loop.ConnectLoop(ctx, c.id, &s.poller)
	}
	return c.r.target.Connect(ctx, c.id)
}
