package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
)

// tick is one reading of every sampler.
type tick map[string]map[string]float64

// sampleAll reads every sampler once, checking the conformance of what
// they return: no error, every key documented in redismetric.Keys, every
// value finite, every detail JSON.
func sampleAll(t *testing.T, set *Set) (tick, map[string]any) {
	t.Helper()
	out, details := tick{}, map[string]any{}
	for _, s := range set.Samplers() {
		values, detail, err := s.Sample(t.Context())
		if err != nil {
			t.Fatalf("sampler %s: %v", s.Name(), err)
		}
		for key, v := range values {
			if rm.Unit(s.Name(), key) == "" {
				t.Errorf("sampler %s: key %q is not in redismetric.Keys", s.Name(), key)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("sampler %s: %s = %v", s.Name(), key, v)
			}
		}
		if detail != nil {
			if _, err := json.Marshal(detail); err != nil {
				t.Errorf("sampler %s: detail: %v", s.Name(), err)
			}
		}
		out[s.Name()], details[s.Name()] = values, detail
	}
	return out, details
}

// The samplers on a server whose disk turns slow under a SET load: INFO
// counts the delayed fsyncs, the latency monitor's aof-write-pending-fsync
// events come through with their hundreds of ms, commandstats sees the
// SETs and not the samplers' own commands; then the slow log's new
// entries, without the samplers' own.
func TestSamplersSeeTheAOFStall(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Redis for about 12 s")
	}
	t.Parallel()
	ctx := t.Context()
	inst, err := redisinstance.Start(ctx, redisinstance.Options{SlowDisk: true,
		Settings: map[string]string{"appendonly": "yes", "appendfsync": "everysec"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Error(err)
		}
	})
	cfg := redisconn.Config{Network: "unix", Addr: inst.Socket()}
	set, err := New(ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = set.Close() })
	if got := len(set.Samplers()); got != 4 {
		t.Fatalf("%d samplers, want 4", got)
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cfg := cfg
		cfg.Name = "load"
		conn, err := redisconn.Dial(loadCtx, cfg)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		for i := 0; loadCtx.Err() == nil; i++ {
			if _, err := conn.Do(loadCtx, "SET", fmt.Sprintf("k%d", i%1000), "v"); err != nil && loadCtx.Err() == nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { stopLoad(); wg.Wait() }()

	first, _ := sampleAll(t, set)
	if first[rm.Info][rm.AOFEnabled] != 1 || first[rm.Info][rm.ConnectedClients] < 1 || first[rm.Info][rm.MaxClients] <= 0 {
		t.Errorf("first INFO reading: %v", first[rm.Info])
	}
	if err := inst.SlowDisk().On(2300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var delayed, pendingMax, sets, cpuMax float64
	var ownCalls []string
	var occurrences []rm.LatencyEvent
	for range 9 {
		time.Sleep(time.Second)
		values, details := sampleAll(t, set)
		if o, ok := details[rm.Latency].([]rm.LatencyEvent); ok {
			occurrences = append(occurrences, o...)
		}
		delayed += values[rm.Info][rm.AOFDelayedFsync]
		cpuMax = max(cpuMax, values[rm.Info][rm.CPUCores])
		pendingMax = max(pendingMax, values[rm.Latency][rm.LatencyMax(rm.EventAOFWritePendingFsync)])
		sets = max(sets, values[rm.CommandStats][rm.CmdCalls("set")])
		for key := range values[rm.CommandStats] {
			if strings.HasPrefix(key, "info.") || strings.HasPrefix(key, "latency|") || strings.HasPrefix(key, "slowlog|") {
				ownCalls = append(ownCalls, key)
			}
		}
	}
	if err := inst.SlowDisk().Off(); err != nil {
		t.Fatal(err)
	}
	// A client in a loop of SET keeps Redis busy: its CPU shows, and no
	// more than the machine has.
	if cpuMax < 0.01 || cpuMax > float64(runtime.NumCPU()) {
		t.Errorf("Redis's CPU peaked at %.3f cores under a SET loop, want some and at most %d", cpuMax, runtime.NumCPU())
	}
	stopLoad()
	wg.Wait()
	t.Logf("delayed fsyncs %g, longest aof-write-pending-fsync %g ms, up to %.0f SET/s", delayed, pendingMax, sets)
	if delayed < 1 {
		t.Error("aof_delayed_fsync did not rise on the slow disk")
	}
	if pendingMax < 150 {
		t.Errorf("aof-write-pending-fsync.max_ms peaked at %g, want the stall of hundreds of ms", pendingMax)
	}
	if sets <= 0 {
		t.Error("commandstats saw no SET")
	}
	// Each occurrence is new since the reading a second before, so it
	// began at most a few seconds before the reading that reports it
	// (its second is truncated; the stalled server answers late).
	if len(occurrences) == 0 {
		t.Error("no latency monitor occurrence in the detail")
	}
	for _, o := range occurrences {
		if o.AgeS <= 0 || o.AgeS > 6 {
			t.Errorf("occurrence %+v: age %.2f s before its reading, want (0, 6]", o, o.AgeS)
		}
	}
	if len(ownCalls) > 0 {
		t.Errorf("commandstats reports the samplers' own commands: %v", ownCalls)
	}

	// Every command is slow at a threshold of 0: the slow log then has
	// the three SETs below and the samplers' own commands, left out.
	admin, err := redisconn.Dial(ctx, redisconn.Config{Network: "unix", Addr: inst.Socket(), Name: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Do(ctx, "CONFIG", "SET", "slowlog-log-slower-than", "0"); err != nil {
		t.Fatal(err)
	}
	sampleAll(t, set) // the baseline: the CONFIG SET and the samplers' reads
	for i := range 3 {
		if _, err := admin.Do(ctx, "SET", "slow", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	values, details := sampleAll(t, set)
	entries, _ := details[rm.Slowlog].([]rm.SlowlogEntry)
	if values[rm.Slowlog][rm.SlowlogNewEntries] < 3 || len(entries) < 3 {
		t.Fatalf("slowlog: %v, entries %+v", values[rm.Slowlog], entries)
	}
	for _, e := range entries {
		if e.ClientName == DefaultName {
			t.Errorf("the slow log detail has the samplers' own %v", e.Args)
		}
	}
	if entries[0].Args[0] != "SET" || entries[0].ClientName != "admin" {
		t.Errorf("newest slow log entry: %+v", entries[0])
	}
}

// The samplers survive a server restart: the tick after it fails or
// reconnects, and a later one reads again.
func TestSamplersReconnect(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	inst, err := redisinstance.Start(ctx, redisinstance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	set, err := New(ctx, redisconn.Config{Network: "unix", Addr: inst.Socket()}, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	sampleAll(t, set)
	if err := inst.Restart(ctx, nil); err != nil {
		t.Fatal(err)
	}
	info := set.Samplers()[0]
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := info.Sample(ctx)
		if err == nil {
			break
		}
		if Unanswered(err) {
			t.Errorf("an error after a restart reads as a server not answering: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO still fails 10 s after the restart: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A server that stops answering (SIGSTOP: frozen, as on a stalled disk)
// makes a sampler fail within its timeout with an error Unanswered
// recognises; an error reply from the server is not one.
func TestUnansweredOnAFrozenServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	inst, err := redisinstance.Start(ctx, redisinstance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Stop() })
	set, err := New(ctx, redisconn.Config{Network: "unix", Addr: inst.Socket()}, Options{Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if _, err := set.session.do(ctx, "NO-SUCH-COMMAND"); err == nil || Unanswered(err) {
		t.Errorf("an error reply: %v, Unanswered %v", err, Unanswered(err))
	}
	pid := inst.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	begin := time.Now()
	_, _, err = set.Samplers()[0].Sample(ctx)
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("the sample took %s with a 300 ms timeout", took)
	}
	if err == nil || !Unanswered(err) {
		t.Errorf("frozen server: %v, Unanswered %v", err, Unanswered(err))
	}
	// Every read while it stays frozen, also those refused without a
	// try until the next reconnect, says so: a frozen window is the
	// whole stall.
	for range 3 {
		for _, smp := range set.Samplers() {
			if _, _, err := smp.Sample(ctx); err == nil || !Unanswered(err) {
				t.Errorf("frozen server, %s: %v, Unanswered %v", smp.Name(), err, Unanswered(err))
			}
		}
		time.Sleep(400 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Thawed, it answers again (on a new connection).
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, _, err := set.Samplers()[0].Sample(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after SIGCONT: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
