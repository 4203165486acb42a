package redistarget

import (
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	redis "github.com/firedrill/firedrill/db/redis/instance"
)

// testServer is a throwaway redis-server (db/redis/instance) for one test,
// stopped and removed when the test ends.
type testServer struct {
	*redis.Instance
}

// startServer starts a throwaway server with opts.
func startServer(tb testing.TB, opts ...redis.Options) *testServer {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Skip("redis-server not installed (scripts/setup.sh installs it)")
	}
	var o redis.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	inst, err := redis.Start(tb.Context(), o)
	if err != nil {
		tb.Fatalf("start redis-server: %v", err)
	}
	tb.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			tb.Errorf("stop redis-server: %v", err)
		}
	})
	return &testServer{inst}
}

// do sends one command on a plain connection (setup and checks outside
// the target under test, authenticated when the server has a password)
// and returns the raw reply.
func (s *testServer) do(tb testing.TB, args ...string) string {
	tb.Helper()
	reply, err := s.try(args...)
	if err != nil {
		tb.Fatal(err)
	}
	return reply
}

// try is do for goroutines other than the test's: it returns its error.
func (s *testServer) try(args ...string) (string, error) {
	c, err := net.Dial("unix", s.Socket())
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var req []byte
	if pw := s.Password(); pw != "" {
		req = appendCommand(req, "AUTH", pw)
	}
	req = appendCommand(req, args...)
	if _, err := c.Write(req); err != nil {
		return "", err
	}
	var buf []byte
	tmp := make([]byte, 4096)
	for {
		n, err := c.Read(tmp)
		if err != nil {
			return "", fmt.Errorf("%v: %w", args, err)
		}
		buf = append(buf, tmp[:n]...)
		if s.Password() != "" {
			end, err := replyEnd(buf)
			if err != nil {
				return "", err
			}
			if end == 0 {
				continue
			}
			if string(buf[:end]) != "+OK\r\n" {
				return "", fmt.Errorf("AUTH: %q", buf[:end])
			}
			rest := buf[end:]
			end, err = replyEnd(rest)
			if err != nil {
				return "", err
			}
			if end > 0 {
				return string(rest[:end]), nil
			}
			continue
		}
		if end, err := replyEnd(buf); err != nil {
			return "", err
		} else if end > 0 {
			return string(buf[:end]), nil
		}
	}
}
