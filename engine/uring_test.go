package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/engine/sockio"
	"github.com/firedrill/firedrill/script"
)

// echoPairs is a LoopTarget whose sessions are socket pairs: each
// transaction sends a numbered line and reads it back from a goroutine
// that echoes every byte, so that a request sent out of order, twice,
// cut short or never shows as a wrong or missing line.
type echoPairs struct {
	t *testing.T
	// fill makes the first request of each session wait behind a full
	// socket buffer: the session first writes until the socket refuses,
	// and its peer starts reading only 50 ms later.
	fill bool
	wg   sync.WaitGroup
}

type echoConn struct {
	io   sockio.Conn
	id   int
	seq  int
	fill bool // fill the socket's buffer before the first request
	line []byte
}

func (t *echoPairs) Connect(ctx context.Context, id int) (Conn, error) {
	return t.ConnectLoop(ctx, id, sockio.Blocking{Timeout: 5 * time.Second})
}

func (t *echoPairs) ConnectLoop(_ context.Context, id int, p Poller) (Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(fds[1], false); err != nil {
		return nil, err
	}
	peer := os.NewFile(uintptr(fds[1]), "peer")
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer peer.Close()
		if t.fill {
			time.Sleep(50 * time.Millisecond)
		}
		buf := make([]byte, 64<<10)
		for {
			n, err := peer.Read(buf)
			if err != nil {
				return
			}
			if _, err := peer.Write(bytes.ReplaceAll(buf[:n], []byte{'.'}, nil)); err != nil {
				return
			}
		}
	}()
	return &echoConn{io: sockio.NewConn(fds[0], p), id: id, fill: t.fill}, nil
}

func (c *echoConn) Exec(_ context.Context, _ *script.Command, _ *script.Vars) error {
	c.seq++
	want := fmt.Appendf(c.line[:0], "client %d request %d\n", c.id, c.seq)
	c.line = want
	if c.seq == 1 && c.fill {
		junk := bytes.Repeat([]byte{'.'}, 4096) // the peer drops dots
		for {
			if _, err := syscall.Write(c.io.FD(), junk); err != nil {
				break
			}
		}
	}
	c.io.W = append(c.io.W, want...)
	if err := c.io.Flush(true); err != nil {
		return err
	}
	for {
		got := c.io.Buffered()
		if len(got) >= len(want) {
			if !bytes.Equal(got[:len(want)], want) {
				return fmt.Errorf("echo %q, want %q", got[:len(want)], want)
			}
			c.io.Consume(len(want))
			return nil
		}
		if err := c.io.Fill(); err != nil {
			return err
		}
	}
}

func (*echoConn) Reset(context.Context) error { return nil }
func (*echoConn) Interrupt(bool)              {}
func (c *echoConn) Close() error              { return c.io.Close() }

func runEchoPairs(t *testing.T, target *echoPairs, clients, threads int, d time.Duration) *Result {
	t.Helper()
	syms := script.NewSymbols()
	sc, err := script.Parse("echo", []byte("SELECT 1;\n"), syms)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), target, Config{Scripts: []*script.Script{sc}, Symbols: syms,
		Clients: clients, Threads: threads, Duration: d, MaxTries: 1})
	if err != nil {
		t.Fatal(err)
	}
	target.wg.Wait()
	if res.Totals.Total.Count == 0 || res.Totals.Total.Failures() > 0 {
		t.Fatalf("%d transactions, %d failed (%v)", res.Totals.Total.Count, res.Totals.Total.Failures(), res.Errors)
	}
	return res
}

// A loop's turn sends its clients' requests together through the send
// ring, each whole, once and in order (the echo checks every line), in
// fewer system calls than requests; with the ring off, each request is
// written at once.
func TestSendRingSendsATurnsRequestsTogether(t *testing.T) {
	if probe := newSendRing(); probe == nil {
		t.Skip("io_uring is not available here: the loops write each request at once")
	} else {
		probe.close()
	}
	t.Parallel()
	res := runEchoPairs(t, &echoPairs{t: t}, 8, 1, 300*time.Millisecond)
	ring := res.SendRing
	// Turns of one reply write at once; the others go through the ring.
	if ring.Requests == 0 || ring.Requests > res.Totals.Total.Count {
		t.Fatalf("%d requests went through the ring for %d transactions", ring.Requests, res.Totals.Total.Count)
	}
	// How many a turn carries depends on how fast the peers answer
	// (goroutines here, on a machine that may be busy): at least some
	// turns must have carried more than one.
	if ring.Calls <= 0 || ring.Calls >= ring.Requests {
		t.Fatalf("%d requests in %d calls: the ring sent one request per call", ring.Requests, ring.Calls)
	}
	if ring.Short != 0 {
		t.Fatalf("%d requests cut short on idle sockets", ring.Short)
	}
	t.Logf("%d transactions, %d requests in %d io_uring_enter calls", res.Totals.Total.Count, ring.Requests, ring.Calls)
}

// A held request that the socket refuses (its buffer full) is finished by
// its client once the socket drains: every line still comes back whole.
func TestSendRingFinishesARefusedRequest(t *testing.T) {
	if probe := newSendRing(); probe == nil {
		t.Skip("io_uring is not available here")
	} else {
		probe.close()
	}
	// Not parallel: every loop that starts reads ringHoldsAll.
	ringHoldsAll = true
	defer func() { ringHoldsAll = false }()
	res := runEchoPairs(t, &echoPairs{t: t, fill: true}, 4, 1, 300*time.Millisecond)
	if res.SendRing.Short < 4 {
		t.Fatalf("%d requests refused by a full socket, want one per client (4)", res.SendRing.Short)
	}
}

// With the ring off (FIREDRILL_SEND_RING=off, or no io_uring) the same
// clients write each request at once and no request goes through a ring.
func TestSendRingOff(t *testing.T) {
	saved := sendRingOn
	sendRingOn = false
	defer func() { sendRingOn = saved }()
	res := runEchoPairs(t, &echoPairs{t: t}, 4, 2, 200*time.Millisecond)
	if res.SendRing != (SendRingStats{}) {
		t.Fatalf("ring off, yet %+v", res.SendRing)
	}
}
