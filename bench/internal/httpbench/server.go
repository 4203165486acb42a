// Package httpbench holds what bench/vs-wrk and bench/vs-vegeta share: the
// local Go server both tools load (net/http answering a 13-byte body,
// after an optional injected delay), started as a child process so that
// its CPU is not the client's, and firedrill's side of a run (the engine
// with db/http/client on its event loops, as a workload of `firedrill
// run` executes it, without samplers).
package httpbench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// body is what the bench server answers: wrk's and vegeta's usual
// "hello" reply, small enough that the request's cost is the protocol's.
const body = "Hello, World!"

// Serve answers every request with body after delay (none when zero), on
// addr ("127.0.0.1:0" picks a port), and prints "listening ADDR" on w once
// it accepts connections. It returns when the listener fails.
func Serve(addr string, delay time.Duration, w io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("bench server: listen on %s: %w", addr, err)
	}
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if delay > 0 {
			time.Sleep(delay)
		}
		hdr := rw.Header()
		hdr["Content-Type"] = []string{"text/plain"}
		_, _ = io.WriteString(rw, body)
	})
	fmt.Fprintf(w, "listening %s\n", ln.Addr())
	return (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}

// Server is a bench server running as a child process.
type Server struct {
	Addr  string // host:port
	Delay time.Duration
	cmd   *exec.Cmd
}

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.Addr }

// StartServer starts bin (the bench's own binary) with the arguments
// that make it serve (serveArgs, which must lead to Serve) and waits
// until it listens.
func StartServer(bin string, serveArgs []string, delay time.Duration) (*Server, error) {
	cmd := exec.Command(bin, serveArgs...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench server: start: %w", err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("bench server: no address (%q): %v", line, err)
	}
	return &Server{Addr: addr, Delay: delay, cmd: cmd}, nil
}

// CPU is the server's CPU time so far (user+system, all its threads),
// from /proc/PID/stat (clock ticks: 10 ms steps).
func (s *Server) CPU() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("bench server CPU: %w", err)
	}
	// The fields after the command name, which may hold spaces: state is
	// the first, utime the 12th and stime the 13th.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("bench server CPU: /proc/%d/stat: unexpected %q", s.cmd.Process.Pid, b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench server CPU: /proc/%d/stat: unexpected %q", s.cmd.Process.Pid, b)
	}
	const tick = 10 * time.Millisecond // USER_HZ, 100 on Linux
	return time.Duration(utime+stime) * tick, nil
}

// Waits is how often the server's threads have blocked so far (the sum
// of their voluntary context switches, from /proc/PID/task/*/status).
func (s *Server) Waits() (int64, error) {
	dirs, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", s.cmd.Process.Pid))
	if err != nil || len(dirs) == 0 {
		return 0, fmt.Errorf("bench server waits: no threads in /proc/%d/task (%v)", s.cmd.Process.Pid, err)
	}
	var sum int64
	for _, path := range dirs {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // a thread that just ended
		}
		_, rest, ok := strings.Cut(string(b), "\nvoluntary_ctxt_switches:")
		if !ok {
			return 0, fmt.Errorf("bench server waits: %s has no voluntary_ctxt_switches", path)
		}
		line, _, _ := strings.Cut(rest, "\n")
		n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench server waits: %s: %w", path, err)
		}
		sum += n
	}
	return sum, nil
}

// Stop kills the server and waits for it.
func (s *Server) Stop() error {
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	_ = s.cmd.Wait()
	return nil
}
