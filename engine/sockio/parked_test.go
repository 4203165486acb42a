package sockio

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// countingPoller waits as Blocking does and counts the waits and the
// descriptors forgotten; with giveUp it gives every wait up at once.
type countingPoller struct {
	Blocking
	giveUp         error
	waits, forgets atomic.Int32
}

func (p *countingPoller) WaitRead(fd int) error {
	p.waits.Add(1)
	if p.giveUp != nil {
		return p.giveUp
	}
	return p.Blocking.WaitRead(fd)
}

func (p *countingPoller) Forget(int) { p.forgets.Add(1) }

// The session is opened off the caller, which waits through its Poller
// (not on the goroutine doing the open) and forgets the pipe when done.
func TestOpenParkedWaitsThroughThePoller(t *testing.T) {
	t.Parallel()
	p := &countingPoller{}
	s, err := OpenParked(context.Background(), p, func() (string, error) {
		time.Sleep(20 * time.Millisecond)
		return "session", nil
	}, func(string) { t.Error("discarded a session that was returned") })
	if err != nil || s != "session" {
		t.Fatalf("OpenParked = %q, %v; want the session", s, err)
	}
	if p.waits.Load() == 0 || p.forgets.Load() != 1 {
		t.Errorf("%d waits and %d forgets, want at least 1 and 1", p.waits.Load(), p.forgets.Load())
	}
	want := errors.New("refused")
	if _, err := OpenParked(context.Background(), p, func() (string, error) { return "", want },
		func(string) { t.Error("discarded a session that failed") }); !errors.Is(err, want) {
		t.Errorf("OpenParked's error = %v, want open's", err)
	}
}

// A run stopping while a session opens: the client returns at once with
// ErrGivenUp, and the session opened later is discarded, not leaked.
// Without the run stopping, a given-up wait waits for the open instead.
func TestOpenParkedGivenUp(t *testing.T) {
	t.Parallel()
	stopped := errors.New("run stopped")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	release := make(chan struct{})
	discarded := make(chan string, 1)
	_, err := OpenParked(ctx, &countingPoller{giveUp: stopped}, func() (string, error) {
		<-release
		return "late session", nil
	}, func(s string) { discarded <- s })
	if !errors.Is(err, ErrGivenUp) || !errors.Is(err, stopped) {
		t.Fatalf("OpenParked's error = %v, want ErrGivenUp wrapping the wait's", err)
	}
	close(release)
	select {
	case s := <-discarded:
		if s != "late session" {
			t.Errorf("discarded %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session opened after the run stopped was not discarded")
	}

	s, err := OpenParked(context.Background(), &countingPoller{giveUp: stopped}, func() (string, error) {
		time.Sleep(10 * time.Millisecond)
		return "session", nil
	}, func(string) { t.Error("discarded a session that was returned") })
	if err != nil || s != "session" {
		t.Errorf("OpenParked with a live run = %q, %v; want the session", s, err)
	}
}
