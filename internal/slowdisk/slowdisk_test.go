package slowdisk_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/internal/slowdisk"
)

// buildLibrary compiles the library into a temp dir.
func buildLibrary(t *testing.T) (lib, dir string) {
	t.Helper()
	dir = t.TempDir()
	lib, err := slowdisk.Build(t.Context(), dir)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("Build left %v in its directory, want only the library", entries)
	}
	return lib, dir
}

// holdWrite runs testdata/holdwrite.c with the library: a sync in one
// thread, a write to the same file and one to a pipe in another while it
// is in flight; it returns the three durations in ms.
func holdWrite(t *testing.T, lib string, control slowdisk.Control) (syncMS, writeMS, pipeMS float64) {
	t.Helper()
	dir := t.TempDir()
	program := filepath.Join(dir, "holdwrite")
	if out, err := exec.Command("cc", "-O2", "-pthread", "-o", program, "testdata/holdwrite.c").CombinedOutput(); err != nil {
		t.Fatalf("compile holdwrite: %v\n%s", err, out)
	}
	cmd := exec.Command(program, filepath.Join(dir, "file"))
	cmd.Env = append(os.Environ(), slowdisk.Env(lib, control)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("holdwrite: %v\n%s", err, out)
	}
	if _, err := fmt.Sscanf(string(out), "sync=%g write=%g pipe=%g", &syncMS, &writeMS, &pipeMS); err != nil {
		t.Fatalf("holdwrite printed %q: %v", out, err)
	}
	return syncMS, writeMS, pipeMS
}

// A sync takes the delay, a write to its file waits for it, a write to a
// pipe does not; with the disk switched off nothing waits.
func TestHoldsWritesBehindSync(t *testing.T) {
	t.Parallel()
	lib, dir := buildLibrary(t)
	control := slowdisk.ControlIn(dir)

	if err := control.On(400 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	syncMS, writeMS, pipeMS := holdWrite(t, lib, control)
	t.Logf("slow: sync %.0f ms, write %.0f ms, pipe %.0f ms", syncMS, writeMS, pipeMS)
	if syncMS < 400 {
		t.Errorf("the sync took %.0f ms, want at least the 400 ms delay", syncMS)
	}
	// The write starts 50 ms into the sync and must wait for its end.
	if writeMS < 300 {
		t.Errorf("the write to the syncing file took %.0f ms, want it held until the sync returned (~350 ms)", writeMS)
	}
	if pipeMS > 100 {
		t.Errorf("the write to a pipe took %.0f ms: only the syncing file's writes may wait", pipeMS)
	}

	if err := control.Off(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(string(control)); !os.IsNotExist(err) {
		t.Errorf("Off left the control file: %v", err)
	}
	syncMS, writeMS, _ = holdWrite(t, lib, control)
	t.Logf("off: sync %.0f ms, write %.0f ms", syncMS, writeMS)
	if syncMS >= 400 || writeMS >= 300 {
		t.Errorf("switched off, the sync took %.0f ms and the write %.0f ms", syncMS, writeMS)
	}
	if err := control.Off(); err != nil {
		t.Errorf("Off twice: %v", err)
	}
}

// The proof that the slow disk is the seed's busy disk: Redis itself,
// with appendfsync everysec, logs that its fsync is taking too long,
// counts aof_delayed_fsync, records aof-write-pending-fsync, and a client's
// SET stalls for hundreds of milliseconds; switched off, none of it.
func TestRedisStallsOnSlowDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Redis for about 15 s")
	}
	t.Parallel()
	lib, libDir := buildLibrary(t)
	server := startRedis(t, libDir, lib)

	// A healthy disk first: the same load, no delayed fsync.
	fast := setLoad(t, server, 3*time.Second)
	if delayed := server.infoField(t, "persistence", "aof_delayed_fsync"); delayed != "0" {
		t.Errorf("with the slow disk off, aof_delayed_fsync = %s, want 0", delayed)
	}
	t.Logf("slow disk off: %d SETs, slowest %s", fast.count, fast.max)

	if err := server.control.On(2300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	slow := setLoad(t, server, 9*time.Second)
	if err := server.control.Off(); err != nil {
		t.Fatal(err)
	}
	t.Logf("slow disk on: %d SETs, slowest %s, stalls over 100 ms at %v", slow.count, slow.max, slow.stalls)
	if slow.max < 150*time.Millisecond {
		t.Errorf("slowest SET took %s on the slow disk, want a stall of hundreds of ms", slow.max)
	}
	if delayed := server.infoField(t, "persistence", "aof_delayed_fsync"); delayed == "0" || delayed == "" {
		t.Errorf("aof_delayed_fsync = %q, want it to have risen", delayed)
	}
	latest := server.command(t, "LATENCY", "LATEST")
	if !strings.Contains(latest, "aof-write-pending-fsync") {
		t.Errorf("LATENCY LATEST has no aof-write-pending-fsync event: %q", latest)
	}
	log, err := os.ReadFile(server.log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Asynchronous AOF fsync is taking too long") {
		t.Errorf("redis-server did not log that its AOF fsync is taking too long; its log:\n%s", log)
	}
}

// load is what setLoad measured.
type load struct {
	count  int
	max    time.Duration
	stalls []time.Duration // offsets from the start of the load of SETs over 100 ms
}

// setLoad sends SETs one at a time for d and times each.
func setLoad(t *testing.T, server *redisServer, d time.Duration) load {
	t.Helper()
	conn := server.dial(t)
	defer conn.close()
	var result load
	begin := time.Now()
	for i := 0; time.Since(begin) < d; i++ {
		start := time.Now()
		if reply := conn.do(t, "SET", fmt.Sprintf("key:%d", i%1000), "value"); reply != "+OK" {
			t.Fatalf("SET: %q", reply)
		}
		took := time.Since(start)
		result.count++
		result.max = max(result.max, took)
		if took > 100*time.Millisecond {
			result.stalls = append(result.stalls, start.Sub(begin).Round(100*time.Millisecond))
		}
	}
	return result
}

// redisServer is a throwaway redis-server with AOF everysec and the slow
// disk library loaded.
type redisServer struct {
	addr    string
	log     string
	control slowdisk.Control
}

// startRedis starts redis-server in a temp dir with the library (until
// instance/redis offers a way in: then this helper goes).
func startRedis(t *testing.T, dir, lib string) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (make setup installs it)")
	}
	port := freePort(t)
	server := &redisServer{addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(dir, "redis.log"), control: slowdisk.ControlIn(dir)}
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nappendonly yes\nappendfsync everysec\nsave \"\"\nlatency-monitor-threshold 10\n",
		port, dir, server.log)
	if err := os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "redis-server", filepath.Join(dir, "redis.conf"))
	cmd.Env = append(os.Environ(), slowdisk.Env(lib, server.control)...)
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := tryDial(server.addr)
		if err == nil {
			reply := conn.do(t, "PING")
			conn.close()
			if reply == "+PONG" {
				return server
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(server.log)
			t.Fatalf("redis-server did not answer on %s: %v\n%s", server.addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// infoField is one field of an INFO section ("" when absent).
func (s *redisServer) infoField(t *testing.T, section, field string) string {
	t.Helper()
	scanner := bufio.NewScanner(strings.NewReader(s.command(t, "INFO", section)))
	for scanner.Scan() {
		if value, ok := strings.CutPrefix(strings.TrimSpace(scanner.Text()), field+":"); ok {
			return value
		}
	}
	return ""
}

// command runs one command on a connection of its own.
func (s *redisServer) command(t *testing.T, args ...string) string {
	t.Helper()
	conn := s.dial(t)
	defer conn.close()
	return conn.do(t, args...)
}
