package redistarget

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// testServer is a throwaway redis-server for one test: its own temp dir,
// a free port on 127.0.0.1 and a unix socket, no persistence; stopped
// and removed when the test ends.
type testServer struct {
	Port   int
	Socket string
	Dir    string
}

func (s *testServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// startServer starts redis-server with extra directives (name value …).
func startServer(t testing.TB, extra ...string) *testServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (scripts/setup.sh installs it)")
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &testServer{Port: port, Socket: filepath.Join(dir, "redis.sock"), Dir: dir}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--unixsocket", s.Socket,
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started, exited := make(chan error, 1), make(chan struct{})
	go func() {
		// Pdeathsig follows the forking thread: keep it alive as long
		// as the server.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", s.Socket)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server exited at start:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s within 10 s: %v", s.Socket, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do sends one command on a plain connection (setup and checks outside
// the target under test) and returns the raw reply.
func (s *testServer) do(t testing.TB, args ...string) string {
	t.Helper()
	c, err := net.Dial("unix", s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(appendCommand(nil, args...)); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	tmp := make([]byte, 4096)
	for {
		n, err := c.Read(tmp)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		buf = append(buf, tmp[:n]...)
		if end, err := replyEnd(buf); err != nil {
			t.Fatal(err)
		} else if end > 0 {
			return string(buf[:end])
		}
	}
}
