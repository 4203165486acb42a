package mariadb

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/sampler"
)

// server is the throwaway MariaDB the tests of this package share. Each
// test uses its own tables; the ones that read server-wide counters or
// the InnoDB monitor do not run in parallel.
var server *mdbinstance.Instance

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests starts the server, runs the tests and stops the server before
// TestMain exits (deferred calls do not run past os.Exit).
func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := mdbinstance.Start(ctx, mdbinstance.Options{Settings: testSettings})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting MariaDB for tests: %v\n", err)
		return 1
	}
	defer func() {
		if err := inst.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping MariaDB: %v\n", err)
		}
	}()
	server = inst
	return m.Run()
}

// testSettings: throwaway data needs no durability; AUTO-INC in its
// "consecutive" mode (1) so that a bulk insert holds the table lock; the
// query cache on, so that its counters move; lock waits give up after
// 10 s so that a stuck test fails instead of hanging; performance_schema
// on, so that an idle blocker's last statement can be read.
var testSettings = map[string]string{
	"performance_schema":             "ON",
	"innodb_flush_log_at_trx_commit": "2",
	"innodb_autoinc_lock_mode":       "1",
	"query_cache_type":               "1",
	"query_cache_size":               "16M",
	"innodb_lock_wait_timeout":       "10",
}

// newSet opens a Set on the server that is closed when the test ends.
func newSet(t *testing.T) *Set {
	t.Helper()
	set, err := New(t.Context(), server.DSN(), Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := set.Close(); err != nil {
			t.Error(err)
		}
	})
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

// openSession opens one connection of its own, closed when the test ends.
func openSession(t *testing.T) *sql.Conn {
	t.Helper()
	cfg, err := mysql.ParseDSN(server.DSN())
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatalf("connect to %s: %v", server.TCPAddr(), err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// exec runs statements on conn and fails the test on error.
func exec(t *testing.T, conn *sql.Conn, statements ...string) {
	t.Helper()
	for _, s := range statements {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		_, err := conn.ExecContext(ctx, s)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// threadID is a session's connection id.
func threadID(t *testing.T, conn *sql.Conn) int64 {
	t.Helper()
	var id int64
	if err := conn.QueryRowContext(t.Context(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// background runs statements on conn in a goroutine, one after another;
// the channel gets the first error (or nil).
func background(conn *sql.Conn, statements ...string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, s := range statements {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
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

// sampleUntil samples every 200 ms until done accepts a sample, and fails
// the test with the last sample after 10 s. InnoDB refreshes its
// information_schema snapshot only when it was not read for 100 ms, so
// faster polling (of this test and the parallel ones) would keep reading
// a stale one.
func sampleUntil(t *testing.T, smp sampler.Sampler, done func(values map[string]float64, detail any) bool) (map[string]float64, any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		values, detail := sample(t, smp)
		if done(values, detail) {
			return values, detail
		}
		if time.Now().After(deadline) {
			t.Fatalf("sampler %s: condition not met in 10 s; last values %v, detail %+v", smp.Name(), values, detail)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// assertNoSampler fails if anything a sampler reported shows a sampler
// statement.
func assertNoSampler(t *testing.T, detail any) {
	t.Helper()
	text, err := json.Marshal(detail)
	if err != nil {
		t.Fatalf("detail %+v: %v", detail, err)
	}
	if strings.Contains(string(text), "firedrill-sampler") {
		t.Errorf("detail shows a sampler statement: %s", text)
	}
}
