package sockio

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/testcert"
)

// pair is a connected pair of unix stream sockets: ours non-blocking
// (as a session's), the peer's blocking (the "server").
func pair(t *testing.T) (ours, peer int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fds[1]) })
	return fds[0], fds[1]
}

func write(t *testing.T, fd int, b []byte) {
	t.Helper()
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
}

// A request flushed reaches the peer; the peer's reply, written in two
// pieces, is read whole by Ensure and consumed; the peer's close is
// ErrClosed; a closed Conn has no descriptor.
func TestFlushEnsureConsume(t *testing.T) {
	t.Parallel()
	ours, peer := pair(t)
	c := NewConn(ours, Blocking{Timeout: 10 * time.Second})
	c.W = append(c.W, "PING\n"...)
	if err := c.Flush(true); err != nil {
		t.Fatal(err)
	}
	if len(c.W) != 0 {
		t.Errorf("W after Flush = %q, want empty", c.W)
	}
	got := make([]byte, 16)
	if n, err := syscall.Read(peer, got); err != nil || string(got[:n]) != "PING\n" {
		t.Fatalf("peer read %q, %v", got[:n], err)
	}
	go func() {
		syscall.Write(peer, []byte("PO"))
		time.Sleep(10 * time.Millisecond)
		syscall.Write(peer, []byte("NG\nrest"))
	}()
	if err := c.Ensure(5); err != nil {
		t.Fatal(err)
	}
	if b := c.Buffered(); !bytes.HasPrefix(b, []byte("PONG\n")) {
		t.Fatalf("Buffered = %q", b)
	}
	c.Consume(5)
	if err := c.Ensure(4); err != nil {
		t.Fatal(err)
	}
	if b := string(c.Buffered()); b != "rest" {
		t.Fatalf("Buffered = %q, want rest", b)
	}
	c.Consume(4)
	syscall.Close(peer)
	if err := c.Fill(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Fill after the peer closed = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil || c.FD() != -1 {
		t.Fatalf("Close = %v, FD %d", err, c.FD())
	}
}

// A reply larger than the buffer grows it; once replies stayed small for
// shrinkAfter replies, it shrinks back, and small replies then cost no
// allocation.
func TestBufferGrowsAndShrinks(t *testing.T) {
	ours, peer := pair(t)
	c := NewConn(ours, Blocking{Timeout: 10 * time.Second})
	if len(c.buf) != initialSize {
		t.Fatalf("new buffer %d bytes, want %d", len(c.buf), initialSize)
	}
	big := bytes.Repeat([]byte("x"), 100<<10)
	sent := make(chan error, 1)
	go func() {
		_, err := syscall.Write(peer, big) // blocking: all of it
		sent <- err
	}()
	if err := c.Ensure(len(big)); err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	c.Consume(len(big))
	grown := len(c.buf)
	if grown < len(big) {
		t.Fatalf("buffer %d bytes after a %d-byte reply", grown, len(big))
	}
	q, reply := make([]byte, 1), []byte("small reply\n")
	roundTrip := func() {
		c.W = append(c.W, 'q')
		if err := c.Flush(true); err != nil {
			t.Fatal(err)
		}
		if _, err := syscall.Read(peer, q); err != nil {
			t.Fatal(err)
		}
		write(t, peer, reply)
		if err := c.Ensure(12); err != nil {
			t.Fatal(err)
		}
		c.Consume(12)
	}
	for range shrinkAfter * 3 {
		roundTrip()
	}
	if len(c.buf) >= grown || len(c.buf) > initialSize {
		t.Errorf("buffer %d bytes after many small replies (grown to %d), want %d", len(c.buf), grown, initialSize)
	}
	if allocs := testing.AllocsPerRun(100, roundTrip); allocs != 0 {
		t.Errorf("a small round trip allocates %.1f times, want 0", allocs)
	}
}

// A wait past its deadline, or longer than its timeout, ends with
// ErrTimeout.
func TestBlockingGivesUp(t *testing.T) {
	t.Parallel()
	ours, _ := pair(t)
	defer syscall.Close(ours)
	if err := (Blocking{Deadline: time.Now().Add(-time.Second)}).WaitRead(ours); !errors.Is(err, ErrTimeout) {
		t.Errorf("past the deadline: %v, want ErrTimeout", err)
	}
	if err := (Blocking{Timeout: time.Millisecond}).WaitRead(ours); !errors.Is(err, ErrTimeout) {
		t.Errorf("nothing to read: %v, want ErrTimeout", err)
	}
	if err := (Blocking{Timeout: time.Second}).WaitWrite(ours); err != nil {
		t.Errorf("an empty socket is writable: %v", err)
	}
}

// Preloaded bytes are read as if sent; a Conn read from memory ends
// with ErrClosed.
func TestPreload(t *testing.T) {
	t.Parallel()
	c := NewConn(-1, nil)
	c.Preload([]byte("abc"))
	if err := c.Ensure(3); err != nil || string(c.Buffered()) != "abc" {
		t.Fatalf("Ensure = %v, Buffered %q", err, c.Buffered())
	}
	if err := c.Ensure(4); !errors.Is(err, ErrClosed) {
		t.Fatalf("past the bytes: %v, want ErrClosed", err)
	}
}

// Through TLS (a real session on loopback): bytes come with no error,
// the peer's close_notify is ErrClosed, and a failed read is a
// "read: ..." error that keeps its cause.
func TestTLS(t *testing.T) {
	t.Parallel()
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		sc, err := l.Accept()
		if err == nil {
			buf := make([]byte, 16)
			_, err = sc.Read(buf)
			if err == nil {
				_, err = sc.Write([]byte("+PONG\r\n"))
			}
			err = errors.Join(err, sc.Close()) // sends close_notify
		}
		served <- err
	}()
	dial := func() *tls.Conn {
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(nc, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
		t.Cleanup(func() { tc.Close() })
		return tc
	}
	c := NewConn(-1, nil)
	c.StartTLS(dial())
	c.W = append(c.W, "PING\r\n"...)
	if err := c.Flush(true); err != nil {
		t.Fatal(err)
	}
	if err := c.Ensure(7); err != nil || string(c.Buffered()) != "+PONG\r\n" {
		t.Fatalf("Ensure = %v, Buffered %q; want +PONG", err, c.Buffered())
	}
	c.Consume(7)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if err := c.Fill(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close_notify: Fill = %v, want ErrClosed", err)
	}

	go func() {
		sc, err := l.Accept()
		if err == nil {
			sc.(*tls.Conn).Handshake()
			<-served // the test is done reading
			sc.Close()
		}
	}()
	tc := dial()
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	c = NewConn(-1, nil)
	c.StartTLS(tc)
	tc.SetReadDeadline(time.Now().Add(-time.Second))
	err = c.Fill()
	served <- nil
	var ne net.Error
	if err == nil || !strings.HasPrefix(err.Error(), "read: ") || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("past the deadline: Fill = %v; want read: ... timeout", err)
	}
}
