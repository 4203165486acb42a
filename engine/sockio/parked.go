package sockio

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// ErrGivenUp is OpenParked's error when the run stopped before the
// session opened.
var ErrGivenUp = errors.New("opening the session was given up")

// OpenParked opens a session with open on a goroutine of its own while
// the caller, a client on an event loop, waits through p on a pipe that
// the goroutine closes when open returns. Opening a session blocks (a
// dial, the server's start of a backend, an authentication): done on the
// loop it would stop every other client of the loop, for seconds when a
// full or restarting server refuses clients that retry.
//
// When the wait is given up while ctx is done (the run is stopping),
// OpenParked returns at once an ErrGivenUp wrapping the wait's error, and
// the session open returns later is handed to discard. When it is given up otherwise, or
// no pipe can be made, the caller waits for open as a blocking connect
// would.
func OpenParked[S any](ctx context.Context, p Poller, open func() (S, error), discard func(S)) (S, error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		return open()
	}
	type result struct {
		s   S
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := open()
		done <- result{s, err}
		syscall.Close(fds[1]) // the read end sees end-of-file: the client wakes
	}()
	defer syscall.Close(fds[0])
	defer p.Forget(fds[0])
	for {
		select {
		case r := <-done:
			return r.s, r.err
		default:
		}
		if err := p.WaitRead(fds[0]); err != nil {
			if ctx.Err() != nil {
				go func() {
					if r := <-done; r.err == nil {
						discard(r.s)
					}
				}()
				var none S
				return none, fmt.Errorf("%w: %w", ErrGivenUp, err)
			}
			r := <-done
			return r.s, r.err
		}
	}
}
