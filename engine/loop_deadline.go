package engine

import (
	"time"

	"github.com/firedrill/firedrill/engine/sockio"
)

// DeadlinePoller is a Poller whose read waits can end at a deadline, for
// a session that bounds each request (an HTTP target's timeout) while
// its client runs on an event loop.
type DeadlinePoller interface {
	Poller
	// WaitReadUntil is WaitRead that returns sockio.ErrTimeout once the
	// deadline passed and fd is still not readable. Like WaitRead it may
	// return nil with nothing to read (at the deadline): the caller's
	// read finds nothing and waits again, and that wait returns the
	// timeout.
	WaitReadUntil(fd int, deadline time.Time) error
}

var _ DeadlinePoller = (*client)(nil)

// WaitReadUntil implements DeadlinePoller: the client waits for its
// socket as in WaitRead and also sleeps until the deadline, so that the
// loop resumes it at whichever comes first (its sweep of sleepers
// resumes a client whose time came, clearing both waits).
func (c *client) WaitReadUntil(fd int, deadline time.Time) error {
	ls := c.ls
	if ls == nil || ls.lp.done || ls.yield == nil || ls.lp.running != c {
		left := time.Until(deadline)
		if left <= 0 {
			return sockio.ErrTimeout
		}
		return sockio.Poll(fd, false, left)
	}
	untilUS := int64(deadline.Sub(c.r.start) / time.Microsecond)
	if untilUS <= c.r.nowUS() {
		return sockio.ErrTimeout
	}
	// A sleeper as loopSleep's: counted, so that the loop looks for it;
	// the loop's resume uncounts it and clears until.
	ls.lp.sleep(ls, untilUS)
	err := c.waitFD(fd, false)
	if ls.until >= 0 { // not resumed by the loop (waitFD failed first)
		ls.until = -1
		ls.lp.sleepers--
	}
	if err != nil {
		return err
	}
	if !c.r.stopping.Load() {
		// The socket is readable, or the deadline came: then the read
		// finds nothing and waits again, and the check above reports the
		// timeout. Telling the two apart here would cost every request
		// a clock read for the rare timeout.
		return nil
	}
	if sockio.Poll(fd, false, 0) == nil {
		return nil
	}
	if c.r.nowUS() >= untilUS {
		return sockio.ErrTimeout
	}
	// Woken because the run is stopping: wait for the socket alone (the
	// run's grace, then its hard stop, bound the wait), or the loop would
	// resume this client on every turn.
	return c.waitFD(fd, false)
}
