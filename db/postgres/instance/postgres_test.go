package postgres

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/firedrill/firedrill/instance/serverproc"
	"github.com/firedrill/firedrill/instance/serverproc/servertest"
	"github.com/jackc/pgx/v5/pgconn"
)

// startForTest starts an instance that is stopped when the test ends.
func startForTest(t *testing.T, opts Options) *Instance {
	t.Helper()
	if testing.Verbose() && opts.Progress == nil {
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

// queryValue runs sql on a new connection and returns the first column of
// the first row.
func queryValue(t *testing.T, connString, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, connString)
	if err != nil {
		t.Fatalf("connect %q: %v", connString, err)
	}
	defer conn.Close(ctx)
	results, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		t.Fatalf("%s via %q: %v", sql, connString, err)
	}
	last := results[len(results)-1]
	if len(last.Rows) == 0 || len(last.Rows[0]) == 0 {
		t.Fatalf("%s via %q: no rows", sql, connString)
	}
	return string(last.Rows[0][0])
}

// execSQL runs sql, which may return no rows, on a new connection.
func execSQL(t *testing.T, connString, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, connString)
	if err != nil {
		t.Fatalf("connect %q: %v", connString, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql).ReadAll(); err != nil {
		t.Fatalf("%s via %q: %v", sql, connString, err)
	}
}

// tcpConnString connects to inst over TCP instead of the unix socket.
func tcpConnString(inst *Instance) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable",
		inst.Port(), inst.User(), inst.Database())
}

func TestStartConnectStop(t *testing.T) {
	t.Parallel()
	inst, err := Start(t.Context(), Options{
		Settings: map[string]string{"synchronous_commit": "off", "application_name": "it's a \\ test"},
		Progress: servertest.LogWriter(t),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	dir := inst.Host()

	if got := queryValue(t, inst.ConnString(), "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 over the socket = %q", got)
	}
	if got := queryValue(t, tcpConnString(inst), "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 over TCP = %q", got)
	}
	if got := queryValue(t, inst.ConnString(), "SHOW synchronous_commit"); got != "off" {
		t.Errorf("synchronous_commit = %q, want off (from Options.Settings)", got)
	}
	if got := queryValue(t, inst.ConnString(), "SHOW application_name"); got != `it's a \ test` {
		t.Errorf("application_name = %q, want the value with its quote and backslash intact", got)
	}
	if got := queryValue(t, inst.ConnString(), "SHOW max_connections"); got != "200" {
		t.Errorf("max_connections = %q, want the default 200", got)
	}
	if got := queryValue(t, inst.ConnString(), "SHOW fsync"); got != "on" {
		t.Errorf("fsync = %q, want on: commit I/O is what firedrill measures", got)
	}
	if got := queryValue(t, inst.ConnString(), "SELECT current_user"); got != inst.User() {
		t.Errorf("current_user = %q, want %q", got, inst.User())
	}
	if hasPgStatStatements(t.Context(), inst.BinDir()) {
		if got := queryValue(t, inst.ConnString(), "SHOW shared_preload_libraries"); got != "pg_stat_statements" {
			t.Errorf("shared_preload_libraries = %q, want pg_stat_statements", got)
		}
	}
	serverVersion := queryValue(t, inst.ConnString(), "SHOW server_version")
	if !strings.HasPrefix(serverVersion, inst.Version()) {
		t.Errorf("server_version %q does not start with Version() %q", serverVersion, inst.Version())
	}
	if inst.PID() == 0 || !serverproc.IsServerIn(inst.PID(), inst.DataDir(), "postgres") {
		t.Errorf("PID() = %d, not the postmaster of %s", inst.PID(), inst.DataDir())
	}
	if owner, err := os.ReadFile(filepath.Join(dir, serverproc.OwnerFileName)); err != nil ||
		!strings.HasPrefix(string(owner), strconv.Itoa(os.Getpid())+" ") {
		t.Errorf("owner file = %q, %v; want our pid %d first", owner, err, os.Getpid())
	}
	if len(servertest.ProcessesIn(dir)) == 0 {
		t.Fatalf("no processes found in %s while the server runs: the /proc check is broken", dir)
	}

	// Several goroutines stop at once (a signal handler and a deferred Stop):
	// all get the same result.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Go(func() { errs[g] = inst.Stop() })
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("Stop in goroutine %d: %v", g, err)
		}
	}
	servertest.AssertGone(t, dir)
	if inst.PID() != 0 {
		t.Errorf("PID() = %d after Stop", inst.PID())
	}
	if err := inst.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := inst.Restart(t.Context(), nil); err == nil {
		t.Errorf("Restart after Stop succeeded")
	}
}

func TestRestartKeepsDataAndAppliesSettings(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{Settings: map[string]string{"work_mem": "8MB"}})
	port, pid := inst.Port(), inst.PID()
	execSQL(t, inst.ConnString(), "CREATE TABLE kept(v int); INSERT INTO kept VALUES (42)")

	if err := inst.Restart(t.Context(), map[string]string{"synchronous_commit": "off"}); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if inst.Port() != port {
		t.Errorf("port changed from %d to %d", port, inst.Port())
	}
	if inst.PID() == pid || inst.PID() == 0 {
		t.Errorf("PID() = %d after restart, was %d: the server did not restart", inst.PID(), pid)
	}
	if got := queryValue(t, inst.ConnString(), "SELECT v FROM kept"); got != "42" {
		t.Errorf("row after restart = %q, want 42", got)
	}
	if got := queryValue(t, inst.ConnString(), "SHOW synchronous_commit"); got != "off" {
		t.Errorf("synchronous_commit = %q after Restart, want off", got)
	}
	if got := queryValue(t, inst.ConnString(), "SHOW work_mem"); got != "8MB" {
		t.Errorf("work_mem = %q after Restart, want the Start setting 8MB kept", got)
	}
	// ALTER SYSTEM still overrides firedrill's settings, as on a real server.
	execSQL(t, inst.ConnString(), "ALTER SYSTEM SET work_mem = '16MB'")
	if err := inst.Restart(t.Context(), nil); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if got := queryValue(t, inst.ConnString(), "SHOW work_mem"); got != "16MB" {
		t.Errorf("work_mem = %q after ALTER SYSTEM and Restart, want 16MB", got)
	}
}

func TestRestartWithBadSettingReportsAndRecovers(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{})
	err := inst.Restart(t.Context(), map[string]string{"shared_buffers": "lots"})
	if err == nil {
		t.Fatal("Restart with shared_buffers=lots succeeded")
	}
	if !strings.Contains(err.Error(), `"lots"`) || !strings.Contains(err.Error(), "server log") {
		t.Errorf("error lacks the server log tail naming the bad value:\n%v", err)
	}
	if inst.PID() != 0 {
		t.Errorf("PID() = %d after a failed restart", inst.PID())
	}
	// The bad setting was not kept: a plain restart brings the server back.
	if err := inst.Restart(t.Context(), nil); err != nil {
		t.Fatalf("Restart after a failed one: %v", err)
	}
	if got := queryValue(t, inst.ConnString(), "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 = %q", got)
	}
}

func TestRestartAfterCrash(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{})
	execSQL(t, inst.ConnString(), "CREATE TABLE kept(v int); INSERT INTO kept VALUES (7)")
	// Hold a backend open: after a crash it must not block the next start.
	ctx := t.Context()
	idle, err := pgconn.Connect(ctx, inst.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close(ctx)
	// And a busy one: a backend in a long computation does not look for
	// its postmaster's death, so it outlives the crash in a process group
	// of its own, holding the shared memory the next start needs.
	busy, err := pgconn.Connect(ctx, inst.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close(context.Background())
	busyDone := make(chan struct{})
	go func() {
		defer close(busyDone)
		busy.Exec(ctx, "SELECT count(*) FROM generate_series(1, 2000000000)").ReadAll()
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if queryValue(t, inst.ConnString(), "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT count(*) FROM generate_series%' AND state = 'active'") == "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the busy query did not start")
		}
	}
	if err := syscall.Kill(inst.PID(), syscall.SIGKILL); err != nil {
		t.Fatalf("kill postmaster: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); inst.PID() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("PID() still reports the killed postmaster")
		}
	}
	if err := inst.Restart(ctx, nil); err != nil {
		t.Fatalf("Restart after crash: %v", err)
	}
	if got := queryValue(t, inst.ConnString(), "SELECT v FROM kept"); got != "7" {
		t.Errorf("row after crash and restart = %q, want 7", got)
	}
	select {
	case <-busyDone:
	case <-time.After(10 * time.Second):
		t.Error("the busy backend of the crashed server is still running")
	}
}

func TestTwoInstancesAtOnce(t *testing.T) {
	t.Parallel()
	instances := make([]*Instance, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for n := range instances {
		wg.Go(func() { instances[n], errs[n] = Start(t.Context(), Options{}) })
	}
	wg.Wait()
	for n, inst := range instances {
		if errs[n] != nil {
			t.Fatalf("Start %d: %v", n, errs[n])
		}
		t.Cleanup(func() {
			if err := inst.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
	}
	a, b := instances[0], instances[1]
	if a.Port() == b.Port() || a.Host() == b.Host() {
		t.Fatalf("instances share port or directory: %s:%d and %s:%d", a.Host(), a.Port(), b.Host(), b.Port())
	}
	for _, inst := range instances {
		if got := queryValue(t, tcpConnString(inst), "SELECT 1"); got != "1" {
			t.Errorf("SELECT 1 on %s = %q", inst.TCPAddr(), got)
		}
	}
}

// instanceDirInError finds the instance directory an error message names.
var instanceDirInError = regexp.MustCompile(`/\S*` + dirPrefix + `[0-9]+`)

func TestBadSettingFailsCleanly(t *testing.T) {
	t.Parallel()
	_, err := Start(t.Context(), Options{Settings: map[string]string{"max_connections": "banana"}})
	if err == nil {
		t.Fatal("Start with max_connections=banana succeeded")
	}
	message := err.Error()
	for _, want := range []string{"server log", `invalid value for parameter "max_connections": "banana"`} {
		if !strings.Contains(message, want) {
			t.Errorf("error lacks %q:\n%s", want, message)
		}
	}
	dir := instanceDirInError.FindString(message)
	if dir == "" {
		t.Fatalf("error does not name the instance directory:\n%s", message)
	}
	servertest.AssertGone(t, dir)
}

func TestSettingsRejectedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings map[string]string
		want     string
	}{
		// The instance chooses these; ConnString would lie otherwise.
		{"port is managed", map[string]string{"port": "5432"}, "chosen by the throwaway server"},
		{"managed names are case-insensitive", map[string]string{"Listen_Addresses": "*"}, "chosen by the throwaway server"},
		// A name with '=' or a newline would inject other settings.
		{"bad name", map[string]string{"work_mem = 1MB\nfsync": "off"}, "not a valid parameter name"},
		{"newline in value", map[string]string{"work_mem": "1MB\nfsync = off"}, "line break"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			t.Parallel()
			_, err := Start(t.Context(), Options{Settings: test.settings})
			if err == nil || !strings.Contains(err.Error(), test.want) {
				t.Errorf("Start(%q) error = %v, want one containing %q", test.settings, err, test.want)
			}
		})
	}
}

func TestNoBinariesGivesInstallHint(t *testing.T) {
	t.Parallel()
	_, err := Start(t.Context(), Options{BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "initdb") {
		t.Errorf("Start with an empty BinDir = %v, want an error naming the missing programs", err)
	}
}

// owner is how servertest starts this package's instances and finds their servers.
var owner = servertest.Owner{
	Env: "FIREDRILL_PG_TEST_HELPER",
	Start: func(ctx context.Context, progress io.Writer) (string, func() error, error) {
		inst, err := Start(ctx, Options{Progress: progress})
		if err != nil {
			return "", nil, err
		}
		return inst.Host(), inst.Stop, nil
	},
	Server:     postmasterPID,
	ProcessDir: func(dir string) string { return dir },
	Settle:     15 * time.Second,
}

// TestHelperProcess is not a test: run by TestKilledOwnerIsReaped in a
// child process, it starts an instance, prints its directory and waits to
// be killed.
func TestHelperProcess(t *testing.T) { servertest.Helper(t, owner) }

func TestKilledOwnerIsReaped(t *testing.T) { servertest.KilledOwnerIsReaped(t, owner) }
