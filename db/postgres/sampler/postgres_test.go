package postgres

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	pginstance "github.com/firedrill/firedrill/db/postgres/instance"
)

// TestPickVersion picks the text of the highest version key ≤ the server's.
func TestPickVersion(t *testing.T) {
	t.Parallel()
	sql := versioned{130000: "13", 140000: "14", 170000: "17"}
	for _, c := range []struct {
		version int
		want    string // "" for an error
	}{
		{120022, ""},   // older than every key
		{130000, "13"}, // exactly a key
		{150008, "14"}, // between keys: the older one
		{170000, "17"},
		{180001, "17"}, // newer than every key: the newest
	} {
		got, err := sql.pick(c.version)
		if (err != nil) != (c.want == "") || got != c.want {
			t.Errorf("pick(%d) = %q, %v; want %q", c.version, got, err, c.want)
		}
	}
}

// TestEverySQLStartsWithMarker checks that every statement the samplers
// send carries the marker comment, for every supported version.
func TestEverySQLStartsWithMarker(t *testing.T) {
	t.Parallel()
	for name, sql := range map[string]versioned{
		activityName: activitySQL, xminHorizonName: xminHorizonSQL, locksName: locksSQL,
		databaseName: databaseSQL, databaseAgesName: databaseAgesSQL, slruName: slruSQL,
		userTablesName: userTablesSQL, walName: walSQL, statementsName: statementsSQL,
		statementsName + " texts": {0: statementsTextSQL},
	} {
		for version, text := range sql {
			if !strings.HasPrefix(text, Marker) {
				t.Errorf("%s SQL for %d does not start with %s", name, version, Marker)
			}
		}
	}
}

// TestSettings snapshots pg_settings with units as current_setting shows.
func TestSettings(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{})
	settings, err := set.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// statement_timeout is the server's (0), not the samplers' own limit.
	for name, want := range map[string]string{"max_connections": "200", "deadlock_timeout": "10ms", "fsync": "off", "statement_timeout": "0"} {
		if settings[name] != want {
			t.Errorf("%s = %q, want %q", name, settings[name], want)
		}
	}
	if sb := settings["shared_buffers"]; !strings.HasSuffix(sb, "B") {
		t.Errorf("shared_buffers = %q, want a size with its unit", sb)
	}
	if major := strings.Split(server.Version(), ".")[0]; fmt.Sprint(set.VersionNum()/10000) != major {
		t.Errorf("VersionNum %d, server version %s", set.VersionNum(), server.Version())
	}
}

// TestQueryTimeout makes a sampler's query wait for a lock past the
// timeout: that tick fails in about the timeout, and the next tick works on
// the same connection.
func TestQueryTimeout(t *testing.T) {
	t.Parallel()
	// A database of its own: the test locks a catalog, which is per database.
	admin := openSession(t, server.ConnString(), "timeout-admin")
	exec(t, admin, "DROP DATABASE IF EXISTS timeout_test WITH (FORCE)")
	exec(t, admin, "CREATE DATABASE timeout_test")
	connString := server.ConnString() + " dbname=timeout_test"
	const timeout = 300 * time.Millisecond
	set := newSet(t, connString, Options{Timeout: timeout})
	smp := samplerOf(t, set, userTablesName)
	sample(t, smp)
	pidBefore := samplerPID(t, set)

	locker := openSession(t, connString, "timeout-locker")
	exec(t, locker, "BEGIN; LOCK TABLE pg_catalog.pg_class IN ACCESS EXCLUSIVE MODE")
	start := time.Now()
	_, _, err := smp.Sample(t.Context())
	elapsed := time.Since(start)
	exec(t, locker, "ROLLBACK")
	if err == nil {
		t.Fatal("a sample blocked on a locked catalog succeeded; want a timeout")
	}
	t.Logf("timed out after %v: %v", elapsed, err)
	if elapsed > timeout+clientMargin+cancelGrace {
		t.Errorf("the failing tick took %v, want about the timeout %v", elapsed, timeout)
	}
	for _, smp := range set.Samplers() {
		sample(t, smp)
	}
	if pidAfter := samplerPID(t, set); pidAfter != pidBefore {
		t.Errorf("the session changed from pid %d to %d: a timeout should leave the connection usable", pidBefore, pidAfter)
	}

	// A backend that does not answer at all (stopped before the query
	// arrives, so it holds no lock): the client deadline and the cancel
	// grace end the tick, and the next tick works on a new connection.
	if err := syscall.Kill(pidBefore, syscall.SIGSTOP); err != nil {
		t.Skipf("cannot stop the backend to simulate a dead server: %v", err)
	}
	start = time.Now()
	_, _, err = smp.Sample(t.Context())
	elapsed = time.Since(start)
	if err := syscall.Kill(pidBefore, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Fatal("a sample on a stopped backend succeeded")
	}
	t.Logf("gave up after %v: %v", elapsed, err)
	if limit := timeout + clientMargin + cancelGrace + time.Second; elapsed > limit {
		t.Errorf("the failing tick took %v, want at most %v", elapsed, limit)
	}
	sample(t, smp)
	if pidAfter := samplerPID(t, set); pidAfter == pidBefore {
		t.Errorf("still on pid %d: want a new connection after an unanswered query", pidAfter)
	}
}

// samplerPID is the backend pid of the set's session.
func samplerPID(t *testing.T, set *Set) int {
	t.Helper()
	var pid int
	err := set.session.query(t.Context(), "read pid", Marker+" SELECT pg_backend_pid()", nil,
		func(rows pgx.Rows) error { return rows.Scan(&pid) })
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestRestartAndPreload starts a server without pg_stat_statements, sees
// the note, restarts it with the library, and finds that the set's
// samplers go on (on a new connection) and that a new set creates the
// extension and samples statements.
func TestRestartAndPreload(t *testing.T) {
	t.Parallel()
	settings := maps.Clone(testSettings)
	settings["shared_preload_libraries"] = ""
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	inst, err := pginstance.Start(ctx, pginstance.Options{Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Error(err)
		}
	})

	set := newSet(t, inst.ConnString(), Options{})
	if note := set.Notes()[statementsName]; !strings.Contains(note, "shared_preload_libraries") {
		t.Errorf("note %q, want one that tells to preload the library", note)
	}
	for _, smp := range set.Samplers() {
		if smp.Name() == statementsName {
			t.Error("pg_stat_statements sampler offered without the library")
		}
		sample(t, smp)
	}

	if err := inst.Restart(ctx, map[string]string{"shared_preload_libraries": "pg_stat_statements"}); err != nil {
		t.Fatal(err)
	}
	for _, smp := range set.Samplers() {
		sample(t, smp)
	}

	after := newSet(t, inst.ConnString(), Options{CreateStatements: true}) // a server the test started
	if note, ok := after.Notes()[statementsName]; ok {
		t.Errorf("after the restart with the library: note %q", note)
	}
	statements := samplerOf(t, after, statementsName)
	sample(t, statements)
	sample(t, statements)
}
