package redis

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/instance/serverproc/servertest"
)

// setLoad is what timeSETs measured.
type setLoad struct {
	count  int
	max    time.Duration
	stalls []time.Duration // offsets of SETs over 100 ms from the load's start
}

// timeSETs sends SETs one at a time on one connection for d and times
// each, as a client with no pipeline sees them.
func timeSETs(t *testing.T, inst *Instance, d time.Duration) setLoad {
	t.Helper()
	conn, err := net.DialTimeout("unix", inst.Socket(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reader := bufio.NewReader(conn)
	var load setLoad
	begin := time.Now()
	for i := 0; time.Since(begin) < d; i++ {
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		start := time.Now()
		if _, err := conn.Write(appendCommand(nil, "SET", fmt.Sprintf("key:%d", i%1000), "value")); err != nil {
			t.Fatal(err)
		}
		if reply, err := readReply(reader); err != nil || reply != "OK" {
			t.Fatalf("SET: %q %v", reply, err)
		}
		took := time.Since(start)
		load.count++
		load.max = max(load.max, took)
		if took > 100*time.Millisecond {
			load.stalls = append(load.stalls, start.Sub(begin).Round(100*time.Millisecond))
		}
	}
	return load
}

// infoField is one field of an INFO section ("" when absent).
func infoField(t *testing.T, inst *Instance, section, field string) string {
	t.Helper()
	for _, line := range strings.Split(do(t, "unix", inst.Socket(), []string{"INFO", section})[0], "\n") {
		if value, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return value
		}
	}
	return ""
}

// The proof that the slow disk is the seed's busy disk (INCIDENTS.md §5):
// with appendfsync everysec, redis-server itself logs that its AOF fsync
// is taking too long, counts aof_delayed_fsync, records the
// aof-write-pending-fsync latency event, and a client's SET stalls for
// hundreds of milliseconds; with the slow disk off, none of it. Stop
// leaves neither the library nor the control file, nor a process.
func TestSlowDiskStallsTheAOF(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Redis for about 15 s")
	}
	t.Parallel()
	inst, err := Start(t.Context(), Options{SlowDisk: true, Progress: servertest.LogWriter(t),
		Settings: map[string]string{"appendonly": "yes", "appendfsync": "everysec"}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = inst.Stop()
		}
	})
	control := inst.SlowDisk()
	if control == "" {
		t.Fatal("SlowDisk() is empty with Options.SlowDisk")
	}

	fast := timeSETs(t, inst, 3*time.Second)
	t.Logf("slow disk off: %d SETs, slowest %s", fast.count, fast.max)
	if delayed := infoField(t, inst, "persistence", "aof_delayed_fsync"); delayed != "0" {
		t.Errorf("with the slow disk off, aof_delayed_fsync = %s, want 0", delayed)
	}

	if err := control.On(2300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	slow := timeSETs(t, inst, 9*time.Second)
	if err := control.Off(); err != nil {
		t.Fatal(err)
	}
	t.Logf("slow disk on: %d SETs, slowest %s, stalls over 100 ms at %v", slow.count, slow.max, slow.stalls)
	if slow.max < 150*time.Millisecond {
		t.Errorf("the slowest SET took %s on the slow disk, want a stall of hundreds of ms", slow.max)
	}
	if delayed := infoField(t, inst, "persistence", "aof_delayed_fsync"); delayed == "0" || delayed == "" {
		t.Errorf("aof_delayed_fsync = %q, want it to have risen", delayed)
	}
	if latest := do(t, "unix", inst.Socket(), []string{"LATENCY", "LATEST"})[0]; !strings.Contains(latest, "aof-write-pending-fsync") {
		t.Errorf("LATENCY LATEST has no aof-write-pending-fsync event: %q", latest)
	}
	log, err := os.ReadFile(inst.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "Asynchronous AOF fsync is taking too long") {
		t.Errorf("redis-server did not log that its AOF fsync is taking too long; its log:\n%s", log)
	}

	stopped = true
	if err := inst.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(inst.Dir()); !os.IsNotExist(err) {
		t.Errorf("Stop left %s (with the library): %v", inst.Dir(), err)
	}
	servertest.WaitNoProcessesIn(t, inst.Dir(), 5*time.Second)
}
