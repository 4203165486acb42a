package redis

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/instance/serverproc"
	"github.com/firedrill/firedrill/instance/serverproc/servertest"
)

// startForTest starts an instance that is stopped when the test ends.
func startForTest(t *testing.T, opts Options) *Instance {
	t.Helper()
	if opts.Progress == nil {
		opts.Progress = servertest.LogWriter(t)
	}
	inst, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return inst
}

// do sends each command on one new connection and returns the replies as
// text: a status or bulk string as it is, an error with its "-", an
// integer in decimal, an array's elements joined by "\n", nil as "(nil)".
func do(t *testing.T, network, addr string, commands ...[]string) []string {
	t.Helper()
	conn, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatalf("connect %s %s: %v", network, addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var request []byte
	for _, args := range commands {
		request = appendCommand(request, args...)
	}
	if _, err := conn.Write(request); err != nil {
		t.Fatalf("send to %s: %v", addr, err)
	}
	reader := bufio.NewReader(conn)
	replies := make([]string, len(commands))
	for n := range commands {
		if replies[n], err = readReply(reader); err != nil {
			t.Fatalf("%v on %s: %v", commands[n], addr, err)
		}
	}
	return replies
}

// readReply reads one RESP2 reply as do describes it.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return line, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "(nil)", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "(nil)", err
		}
		items := make([]string, n)
		for j := range items {
			if items[j], err = readReply(r); err != nil {
				return "", err
			}
		}
		return strings.Join(items, "\n"), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func TestStartPingStop(t *testing.T) {
	t.Parallel()
	var progress strings.Builder
	inst, err := Start(t.Context(), Options{Progress: &progress})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer inst.Stop()
	if inst.Port() == 6379 {
		t.Errorf("the throwaway server took Redis's standard port")
	}
	if inst.Version() == "" || inst.PID() == 0 {
		t.Errorf("version %q, pid %d: want both", inst.Version(), inst.PID())
	}
	if !strings.Contains(progress.String(), "started Redis "+inst.Version()+" on "+inst.Addr()) {
		t.Errorf("progress does not say where it started:\n%s", progress.String())
	}
	for _, via := range [][2]string{{"tcp", inst.Addr()}, {"unix", inst.Socket()}} {
		got := do(t, via[0], via[1], []string{"PING"}, []string{"SET", "k", "v w"}, []string{"GET", "k"})
		if want := []string{"PONG", "OK", "v w"}; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("via %s: %q, want %q", via[0], got, want)
		}
	}
	// The defaults the package doc promises, as the server reports them.
	got := do(t, "unix", inst.Socket(),
		[]string{"CONFIG", "GET", "latency-monitor-threshold"},
		[]string{"CONFIG", "GET", "save"},
		[]string{"CONFIG", "GET", "dir"},
		[]string{"CONFIG", "GET", "bind"})
	want := []string{"latency-monitor-threshold\n10", "save\n", "dir\n" + inst.DataDir(), "bind\n127.0.0.1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("CONFIG GET: %q, want %q", got, want)
	}
	if os.Geteuid() == 0 {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", inst.PID()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(status), "\nUid:\t0\t") {
			t.Errorf("redis-server runs as root")
		}
	}

	dir := inst.Dir()
	if err := inst.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Stop (stat: %v)", dir, err)
	}
	servertest.WaitNoProcessesIn(t, dir, 2*time.Second)
	if inst.PID() != 0 {
		t.Errorf("PID %d after Stop, want 0", inst.PID())
	}
	if err := inst.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestRestartKeepsDataAndAppliesSettings(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{Settings: map[string]string{"appendonly": "yes", "appendfsync": "everysec"}})
	do(t, "unix", inst.Socket(), []string{"SET", "survives", "restart"})
	before := inst.PID()
	if err := inst.Restart(t.Context(), map[string]string{"appendfsync": "always"}); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if inst.PID() == before || inst.PID() == 0 {
		t.Errorf("pid %d after restart, %d before: want a new server", inst.PID(), before)
	}
	got := do(t, "tcp", inst.Addr(), []string{"CONFIG", "GET", "appendfsync"}, []string{"CONFIG", "GET", "appendonly"}, []string{"GET", "survives"})
	if want := "appendfsync\nalways|appendonly\nyes|restart"; strings.Join(got, "|") != want {
		t.Errorf("after restart: %q, want %q", strings.Join(got, "|"), want)
	}
	if s := inst.Settings(); s["appendfsync"] != "always" || s["appendonly"] != "yes" {
		t.Errorf("Settings() = %v: want the merged settings", s)
	}
	// A setting the server refuses: the error says why, and the server
	// comes back with the next good restart.
	err := inst.Restart(t.Context(), map[string]string{"appendfsync": "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "appendfsync") {
		t.Fatalf("Restart with a bad value: %v, want the server's complaint", err)
	}
	if inst.PID() != 0 {
		t.Errorf("a server runs after a failed restart")
	}
	if err := inst.Restart(t.Context(), nil); err != nil {
		t.Fatalf("Restart after a failed one: %v", err)
	}
	if got := do(t, "unix", inst.Socket(), []string{"GET", "survives"}); got[0] != "restart" {
		t.Errorf("GET after recovery: %q", got[0])
	}
}

func TestPasswordIsRequiredAndNotReadable(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{Password: `se cr"et\`})
	if got := do(t, "tcp", inst.Addr(), []string{"PING"}); !strings.HasPrefix(got[0], "-NOAUTH") {
		t.Errorf("PING without AUTH: %q, want -NOAUTH", got[0])
	}
	if got := do(t, "tcp", inst.Addr(), []string{"AUTH", inst.Password()}, []string{"PING"}); got[0] != "OK" || got[1] != "PONG" {
		t.Errorf("AUTH, PING: %q", got)
	}
	info, err := os.Stat(filepath.Join(inst.Dir(), confFileName))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		t.Errorf("%s holds the password and is mode %v", confFileName, info.Mode().Perm())
	}
}

func TestBadSettingFailsCleanly(t *testing.T) {
	// A private temp root (t.Setenv keeps the test out of the parallel
	// phase), reachable by the server's user.
	root, err := os.MkdirTemp("/tmp", "fdbad-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", root)
	_, err = Start(t.Context(), Options{Settings: map[string]string{"no-such-directive": "yes"}})
	if err == nil {
		t.Fatal("Start with an unknown directive succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-directive") {
		t.Errorf("error does not carry the server's complaint: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(root, dirPrefix+"*"))
	if len(left) != 0 {
		t.Errorf("a failed Start left %v", left)
	}
}

func TestSettingsRejectedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	tests := map[string]map[string]string{
		"managed port":     {"port": "6379"},
		"managed dir":      {"dir": "/"},
		"managed password": {"requirepass": "x"},
		"not a directive":  {"Append Only": "yes"},
		"line break":       {"appendfsync": "no\nport 6379"},
	}
	for name, settings := range tests {
		if _, err := Start(t.Context(), Options{Settings: settings}); err == nil {
			t.Errorf("%s: Start accepted %v", name, settings)
		}
	}
}

func TestVersionFromBanner(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0\n": "7.0.15",
		"Redis server v=7.2.4 sha=00000000:0 malloc=libc bits=64 build=1\n":                          "7.2.4",
		"Valkey server v=8.0.1 sha=00000000:0\n":                                                     "8.0.1",
	}
	for banner, want := range tests {
		if got, ok := versionFromBanner(banner); !ok || got != want {
			t.Errorf("versionFromBanner(%q) = %q, %v; want %q", banner, got, ok, want)
		}
	}
	if _, ok := versionFromBanner("redis-server: command not found"); ok {
		t.Error("a banner without v= gave a version")
	}
}

func TestQuoteConfRoundTripsThroughTheServer(t *testing.T) {
	t.Parallel()
	// The server itself reads the quoted password back: AUTH with the
	// original proves the quoting.
	for _, password := range []string{"plain", `back\slash`, `"quoted"`, "tab\there", "ünï"} {
		inst := startForTest(t, Options{Password: password})
		if got := do(t, "unix", inst.Socket(), []string{"AUTH", password}); got[0] != "OK" {
			t.Errorf("AUTH %q: %q", password, got[0])
		}
		inst.Stop()
	}
}

// A descriptor firedrill holds without close-on-exec must not reach the server.
func TestServerInheritsNoDescriptors(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "caller.lock")
	fd, err := syscall.Open(lock, syscall.O_CREAT|syscall.O_RDWR, 0o600) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	inst := startForTest(t, Options{})
	fdDir := filepath.Join("/proc", strconv.Itoa(inst.PID()), "fd")
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if target, _ := os.Readlink(filepath.Join(fdDir, e.Name())); strings.HasPrefix(target, lock) {
			t.Errorf("redis-server holds the caller's %s as fd %s", lock, e.Name())
		}
	}
}

func TestIsServerOfRejectsOtherProcesses(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{})
	if !isServerOf(inst.PID(), inst.DataDir()) {
		t.Errorf("the instance's own server is not recognised")
	}
	// A redis-server working elsewhere (one on 6379, another instance)
	// is never taken for a stale one.
	if isServerOf(inst.PID(), "/var/lib/redis") {
		t.Error("a redis-server in another directory was taken for this one")
	}
	if isServerOf(os.Getpid(), inst.DataDir()) {
		t.Error("the test binary was taken for a redis-server")
	}
}

// owner is how servertest starts this package's instances and finds their servers.
var owner = servertest.Owner{
	Env: "FIREDRILL_REDIS_TEST_HELPER",
	Start: func(ctx context.Context, progress io.Writer) (string, func() error, error) {
		inst, err := Start(ctx, Options{Progress: progress})
		if err != nil {
			return "", nil, err
		}
		return inst.Dir(), inst.Stop, nil
	},
	Server:     serverIn,
	ProcessDir: func(dir string) string { return filepath.Join(dir, dataDirName) },
	Settle:     10 * time.Second,
}

// TestHelperProcess is not a test: run by TestKilledOwnerIsReaped in a
// child process, it starts an instance, prints its directory and waits to
// be killed.
func TestHelperProcess(t *testing.T) { servertest.Helper(t, owner) }

func TestKilledOwnerIsReaped(t *testing.T) { servertest.KilledOwnerIsReaped(t, owner) }

// A server still running in a dead owner's directory (its parent-death
// signal lost, say) is killed by the reaper before the directory goes.
func TestReapKillsAServerLeftRunning(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	// Make the live instance look orphaned: its owner is a dead pid.
	if err := os.WriteFile(filepath.Join(inst.Dir(), serverproc.OwnerFileName), []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(inst.Dir())
	if err := reaper.ReapStale(root, nil); err != nil {
		t.Fatalf("ReapStale: %v", err)
	}
	if _, err := os.Stat(inst.Dir()); !os.IsNotExist(err) {
		t.Errorf("%s not removed", inst.Dir())
	}
	servertest.WaitNoProcessesIn(t, inst.DataDir(), 5*time.Second)
}

// A process the server forked (a BGSAVE child) that outlived the server
// in a dead owner's directory is killed by the reaper too, found by its
// working directory.
func TestReapKillsAForkedChildLeftBehind(t *testing.T) {
	root, err := os.MkdirTemp("/tmp", "fdreapchild-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir := filepath.Join(root, dirPrefix+"orphan")
	dataDir := filepath.Join(dir, dataDirName)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, serverproc.OwnerFileName), []byte(strconv.Itoa(dead.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A stand-in for redis-server's child: a program named redis-… working
	// in the data directory (the real server leaves its pid file behind).
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep to stand in for a forked child")
	}
	program, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	standIn := filepath.Join(root, "redis-rdb-bgsave")
	if err := os.WriteFile(standIn, program, 0o755); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(standIn, "300")
	child.Dir = dataDir
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { child.Wait(); close(exited) }()
	defer child.Process.Kill()
	var reported []string
	if err := reaper.ReapStale(root, func(format string, args ...any) { reported = append(reported, fmt.Sprintf(format, args...)) }); err != nil {
		t.Fatalf("ReapStale: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the forked child left behind is still running")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s not removed (%v); reported %v", dir, err, reported)
	}
}

// A Redis someone else runs (Debian's on 6379, here one on a free port so
// that the test never touches a real one) is left alone by Start, Stop and
// the reaper, whose directories it does not live in.
func TestSomeoneElsesRedisIsLeftAlone(t *testing.T) {
	t.Parallel()
	port, err := serverproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	theirs := t.TempDir()
	if err := os.Chmod(theirs, 0o777); err != nil {
		t.Fatal(err)
	}
	other := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", theirs, "--save", "")
	other.Dir = theirs
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("their redis-server on %s did not start: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	inst := startForTest(t, Options{})
	if inst.Port() == port {
		t.Fatalf("the instance took their port %d", port)
	}
	if err := inst.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := reaper.ReapStale(os.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	if isServerOf(other.Process.Pid, inst.DataDir()) {
		t.Error("their redis-server was taken for the instance's")
	}
	if got := do(t, "tcp", addr, []string{"PING"}); got[0] != "PONG" {
		t.Errorf("their redis-server: %q", got)
	}
}
