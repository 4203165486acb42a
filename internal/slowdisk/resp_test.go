package slowdisk_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// respConn is the least RESP client the tests need: one command at a
// time, the reply flattened to text (simple strings keep their "+",
// errors their "-"; a bulk string is its bytes; an array its elements,
// one per line).
type respConn struct {
	conn   net.Conn
	reader *bufio.Reader
}

func tryDial(addr string) (*respConn, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{conn: conn, reader: bufio.NewReader(conn)}, nil
}

func (s *redisServer) dial(t *testing.T) *respConn {
	t.Helper()
	conn, err := tryDial(s.addr)
	if err != nil {
		t.Fatalf("connect to redis-server at %s: %v", s.addr, err)
	}
	return conn
}

func (c *respConn) close() { _ = c.conn.Close() }

func (c *respConn) do(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, arg := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(arg), arg)
	}
	if err := c.conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c.conn, b.String()); err != nil {
		t.Fatalf("send %s: %v", args[0], err)
	}
	reply, err := c.read()
	if err != nil {
		t.Fatalf("reply to %s: %v", args[0], err)
	}
	return reply
}

func (c *respConn) read() (string, error) {
	line, err := c.reader.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '+', '-', ':':
		return line, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.reader, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		parts := make([]string, 0, max(n, 0))
		for range n {
			part, err := c.read()
			if err != nil {
				return "", err
			}
			parts = append(parts, part)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port
}
