package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	pginstance "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/sampler"
)

// server is the throwaway PostgreSQL the tests of this package share. Each
// test uses its own tables and application names; tests that look at the
// whole server (the xmin horizon) do not run in parallel.
var server *pginstance.Instance

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests starts the server, runs the tests and stops the server before
// TestMain exits (deferred calls do not run past os.Exit).
func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := pginstance.Start(ctx, pginstance.Options{Settings: testSettings})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting PostgreSQL for tests: %v\n", err)
		return 1
	}
	defer func() {
		if err := inst.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
		}
	}()
	server = inst
	return m.Run()
}

// testSettings are the servers' settings: throwaway data needs no
// durability; deadlocks are found after 10 ms instead of 1 s; I/O is timed
// so that the *_time_ms series have something to show.
var testSettings = map[string]string{
	"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
	"deadlock_timeout": "10ms", "max_prepared_transactions": "5",
	"track_io_timing": "on", "track_wal_io_timing": "on",
}

// newSet opens a Set on connString that is closed when the test ends.
func newSet(t *testing.T, connString string, opts Options) *Set {
	t.Helper()
	set, err := New(t.Context(), connString, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(set.Close)
	return set
}

// samplerOf returns the set's sampler of a source.
func samplerOf(t *testing.T, set *Set, name string) sampler.Sampler {
	t.Helper()
	for _, smp := range set.Samplers() {
		if smp.Name() == name {
			return smp
		}
	}
	t.Fatalf("no sampler %q in the set (notes: %v)", name, set.Notes())
	return nil
}

// openSession opens a session tagged with app that is closed when the test
// ends, unless the test closes it first.
func openSession(t *testing.T, connString, app string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString+" application_name="+app)
	if err != nil {
		t.Fatalf("connect as %s: %v", app, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// exec runs statements on conn and fails the test on error.
func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// sample reads smp once and fails the test on error.
func sample(t *testing.T, smp sampler.Sampler) (map[string]float64, any) {
	t.Helper()
	values, detail, err := smp.Sample(t.Context())
	if err != nil {
		t.Fatalf("sampler %s: %v", smp.Name(), err)
	}
	return values, detail
}

// sampleUntil samples every 100 ms until done accepts a sample, and fails
// the test with the last sample after 15 s. Statistics reach the shared
// views only when backends flush them (at most once a second), so tests
// wait for what they caused instead of expecting it at once.
func sampleUntil(t *testing.T, smp sampler.Sampler, done func(values map[string]float64, detail any) bool) (map[string]float64, any) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		values, detail := sample(t, smp)
		if done(values, detail) {
			return values, detail
		}
		if time.Now().After(deadline) {
			t.Fatalf("sampler %s: condition not met in 15 s; last values %v, detail %+v", smp.Name(), values, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pid is a session's backend process id.
func pid(conn *pgx.Conn) int { return int(conn.PgConn().PID()) }

// assertNoSampler fails if anything a sampler reported names a sampler
// session.
func assertNoSampler(t *testing.T, values map[string]float64, detail any) {
	t.Helper()
	for key := range values {
		if strings.Contains(key, DefaultAppName) {
			t.Errorf("value %q names a sampler session", key)
		}
	}
	text, err := json.Marshal(detail)
	if err != nil {
		t.Fatalf("detail %+v: %v", detail, err)
	}
	if strings.Contains(string(text), DefaultAppName) || strings.Contains(string(text), Marker) {
		t.Errorf("detail names a sampler session or statement: %s", text)
	}
}

// waitForLockWait returns once the session pid waits for a heavyweight
// lock, as seen from conn.
func waitForLockWait(t *testing.T, conn *pgx.Conn, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting bool
		err := conn.QueryRow(t.Context(),
			"SELECT count(*) > 0 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", pid).Scan(&waiting)
		if err != nil {
			t.Fatalf("look for pid %d's lock wait: %v", pid, err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not wait for a lock in 10 s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
