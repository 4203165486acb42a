package postgres_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	"github.com/firedrill/firedrill/engine"
)

// What scenarios add to the engine, on a real server: application pools,
// errors that fail a transaction instead of aborting the client, lost
// connections, and shapes that change the number of clients.

func TestPoolSharesConnectionsAndMeasuresTheWait(t *testing.T) {
	pg := admin(t)
	cfg := newConfig(t, "slow.sql", "SELECT pg_sleep(0.02);\n")
	cfg.Clients, cfg.Duration, cfg.Pool = 8, 1500*time.Millisecond, 2
	cfg.ContinueOnError = true
	done := start(t, context.Background(), pgtarget.Prepared, cfg)
	var most int64
	waitFor(time.Second, func() bool { most = max(most, sessions(t, pg)); return false })
	out := <-done
	if out.err != nil {
		t.Fatalf("Run: %v\n%s", out.err, out.stderr)
	}
	if most > 2 {
		t.Errorf("%d sessions of 8 clients with a pool of 2, want at most 2", most)
	}
	tot := out.res.Totals
	if tot.Total.Count == 0 || tot.Total.Failures() != 0 {
		t.Fatalf("%d succeeded, %d failed; want successes only", tot.Total.Count, tot.Total.Failures())
	}
	// 8 clients on 2 connections: most of a transaction is waiting.
	if tot.PoolWait == nil || tot.PoolWait.Count() != tot.Total.Count {
		t.Fatalf("pool wait recorded for %v transactions, want %d", tot.PoolWait, tot.Total.Count)
	}
	if p50 := tot.PoolWait.Quantile(50); p50 < 20_000 {
		t.Errorf("median pool wait %d µs, want at least one query's time (20 ms)", p50)
	}
	// Latency is what the application sees: it includes the wait.
	if tot.Hist.Quantile(50) < tot.PoolWait.Quantile(50) {
		t.Errorf("median latency %d µs below median pool wait %d µs", tot.Hist.Quantile(50), tot.PoolWait.Quantile(50))
	}
}

func TestPoolTimeoutFailsTheTransaction(t *testing.T) {
	cfg := newConfig(t, "slow.sql", "SELECT pg_sleep(0.1);\n")
	cfg.Clients, cfg.Duration, cfg.Pool, cfg.PoolTimeout = 6, time.Second, 1, 30*time.Millisecond
	cfg.ContinueOnError = true
	res := runOK(t, pgtarget.Simple, cfg)
	tot := res.Totals
	if tot.Total.OtherFailures == 0 || tot.Errors[engine.CodePoolTimeout] != tot.Total.OtherFailures {
		t.Fatalf("%d failures, errors %v; want pool timeouts", tot.Total.OtherFailures, tot.Errors)
	}
	if tot.Total.Count == 0 {
		t.Error("no transaction got the connection")
	}
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "timed out after 30ms (pool of 1)") {
		t.Errorf("errors %+v, want one pool-timeout description", res.Errors)
	}
}

func TestContinueOnErrorCountsBySQLState(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		cfg := newConfig(t, "maybe.sql", "\\set d random(0, 1)\nSELECT 1 / :d;\n")
		cfg.Clients, cfg.Duration, cfg.ContinueOnError = 2, 500*time.Millisecond, true
		res := runOK(t, mode, cfg)
		tot := res.Totals
		if res.AbortedClient != 0 {
			t.Fatalf("%d clients aborted", res.AbortedClient)
		}
		if tot.Total.Count == 0 || tot.Total.OtherFailures == 0 {
			t.Fatalf("%d succeeded, %d failed; want both", tot.Total.Count, tot.Total.OtherFailures)
		}
		if tot.Errors["22012"] != tot.Total.OtherFailures {
			t.Errorf("errors %v, want every failure as 22012 (division by zero)", tot.Errors)
		}
		if len(res.Errors) != 1 || res.Errors[0].Count != tot.Total.OtherFailures || res.Errors[0].First > res.Errors[0].Last {
			t.Errorf("error infos %+v", res.Errors)
		}
	})
}

func TestDeadlockDetailIsKept(t *testing.T) {
	pg := admin(t)
	setup(t, pg, "CREATE TABLE dl2 (id int PRIMARY KEY); INSERT INTO dl2 VALUES (1), (2)", "DROP TABLE dl2")
	lock := func(a, b int) string {
		return "BEGIN;\nSELECT id FROM dl2 WHERE id = " + string(rune('0'+a)) + " FOR UPDATE;\nSELECT pg_sleep(0.01);\n" +
			"SELECT id FROM dl2 WHERE id = " + string(rune('0'+b)) + " FOR UPDATE;\nEND;\n"
	}
	cfg := newConfig(t, "ab.sql", lock(1, 2), "ba.sql", lock(2, 1))
	cfg.Clients, cfg.Duration, cfg.ContinueOnError = 4, time.Second, true
	res := runOK(t, pgtarget.Extended, cfg)
	if res.Totals.Total.DeadlockFailures == 0 {
		t.Fatal("no deadlock")
	}
	var info *engine.ErrorInfo
	for i := range res.Errors {
		if res.Errors[i].Code == "40P01" {
			info = &res.Errors[i]
		}
	}
	if info == nil || !strings.Contains(info.Detail, "waits for ShareLock on transaction") {
		t.Fatalf("deadlock error info %+v, want the server's detail naming the processes", info)
	}
	if res.Totals.Errors["40P01"] != res.Totals.Total.DeadlockFailures {
		t.Errorf("errors %v, deadlock failures %d", res.Totals.Errors, res.Totals.Total.DeadlockFailures)
	}
}

func TestTerminatedClientsReconnect(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		for _, pool := range []int{0, 2} {
			pg := admin(t)
			cfg := newConfig(t, "s.sql", "SELECT pg_sleep(0.01);\n")
			cfg.Clients, cfg.Duration, cfg.ContinueOnError, cfg.Pool = 3, 1500*time.Millisecond, true, pool
			done := start(t, context.Background(), mode, cfg)
			if !waitFor(time.Second, func() bool { return sessions(t, pg) >= int64(min(3, max(pool, 3))) || pool > 0 }) {
				t.Fatal("clients did not connect")
			}
			time.Sleep(300 * time.Millisecond)
			sqlExec(t, pg, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '"+appName+"'")
			out := <-done
			if out.err != nil {
				t.Fatalf("pool %d: Run: %v\n%s", pool, out.err, out.stderr)
			}
			tot := out.res.Totals
			if tot.Total.OtherFailures == 0 {
				t.Errorf("pool %d: no failure from the terminated sessions; errors %v", pool, tot.Errors)
			}
			if tot.Errors["57P01"] == 0 && tot.Errors[engine.CodeConnection] == 0 {
				t.Errorf("pool %d: errors %v, want 57P01 (terminated) or a lost connection", pool, tot.Errors)
			}
			// They went on after reconnecting: sessions exist again near the end.
			if n := tot.Total.Count; n < 50 {
				t.Errorf("pool %d: only %d transactions; clients did not go on", pool, n)
			}
		}
	})
}

func TestShapeChangesActiveClients(t *testing.T) {
	pg := admin(t)
	cfg := newConfig(t, "s.sql", "SELECT pg_sleep(0.005);\n")
	cfg.Clients, cfg.Duration, cfg.ContinueOnError = 4, 3*time.Second, true
	cfg.Shape = func(el time.Duration) (int, float64) {
		if el < 600*time.Millisecond {
			return 1, 0
		}
		return 4, 0
	}
	ticks := make(chan time.Time, 1)
	cfg.Ticks = ticks
	var clients atomic.Int64
	cfg.OnProgress = func(p *engine.Progress) { clients.Store(int64(p.Clients)) }
	done := start(t, context.Background(), pgtarget.Simple, cfg)
	time.Sleep(300 * time.Millisecond)
	early := sessions(t, pg)
	ticks <- time.Now()
	// The stage adds clients 600 ms after the engine's start (which a
	// loaded machine may delay): wait for them rather than sleep.
	waitFor(2*time.Second, func() bool { return sessions(t, pg) == 4 })
	late := sessions(t, pg)
	time.Sleep(100 * time.Millisecond)
	ticks <- time.Now()
	out := <-done
	if out.err != nil {
		t.Fatalf("Run: %v\n%s", out.err, out.stderr)
	}
	if early != 1 || late != 4 {
		t.Errorf("sessions %d then %d, want 1 then 4 (clients connect when a stage adds them)", early, late)
	}
	if clients.Load() != 4 {
		t.Errorf("progress reported %d clients at the end, want 4", clients.Load())
	}
}
