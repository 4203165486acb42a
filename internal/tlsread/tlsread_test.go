package tlsread

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/testcert"
)

// TestRead reads through a real TLS session on loopback: bytes come with
// no error, the peer's close_notify is the caller's closed error, and a
// failed read is a "read: ..." error.
func TestRead(t *testing.T) {
	files, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, err = c.Write([]byte("+PONG\r\n"))
			err = errors.Join(err, c.Close()) // sends close_notify
		}
		served <- err
	}()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(nc, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	defer tc.Close()

	closed := errors.New("server closed the connection")
	b := make([]byte, 64)
	n, err := Read(tc, b, closed)
	if err != nil || string(b[:n]) != "+PONG\r\n" {
		t.Fatalf("Read = %q, %v; want +PONG, nil", b[:n], err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if n, err := Read(tc, b, closed); n != 0 || err != closed {
		t.Fatalf("after close_notify: Read = %d, %v; want 0, the closed error", n, err)
	}

	// A read that fails (here: past its deadline) is "read: ..." with
	// the cause kept.
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.(*tls.Conn).Handshake() // the client's Handshake reports a failure
			<-served                  // the test is done reading
			c.Close()
		}
	}()
	nc, err = net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc2 := tls.Client(nc, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	defer tc2.Close()
	if err := tc2.Handshake(); err != nil {
		t.Fatal(err)
	}
	tc2.SetReadDeadline(time.Now().Add(-time.Second))
	n, err = Read(tc2, b, closed)
	served <- nil
	var ne net.Error
	if n != 0 || err == nil || !strings.HasPrefix(err.Error(), "read: ") || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("past the deadline: Read = %d, %v; want 0, read: ... timeout", n, err)
	}
}
