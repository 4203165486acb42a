package mariadb

import (
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/instance/serverproc"
	"github.com/firedrill/firedrill/instance/serverproc/servertest"
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

// openDB is a database/sql handle on inst as the run's user over network
// ("tcp" or "unix").
func openDB(t *testing.T, inst *Instance, network string) *sql.DB {
	t.Helper()
	connector, err := mysql.NewConnector(inst.clientConfig(network))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	return db
}

// queryValue runs query and returns the first column of the first row.
func queryValue(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var value sql.NullString
	if err := db.QueryRowContext(ctx, query).Scan(&value); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return value.String
}

// execSQL runs statements that return no rows.
func execSQL(t *testing.T, db *sql.DB, statements ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, statement := range statements {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
}

func TestStartConnectStop(t *testing.T) {
	t.Parallel()
	var progress strings.Builder
	inst, err := Start(t.Context(), Options{Progress: &progress})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	dir := inst.Dir()
	defer func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		servertest.AssertGone(t, dir)
	}()
	if !strings.Contains(progress.String(), "starting MariaDB "+inst.Version()+" on "+inst.TCPAddr()) {
		t.Errorf("progress does not say what it starts where:\n%s", progress.String())
	}
	if strings.Contains(progress.String(), inst.Password()) {
		t.Errorf("progress shows the password:\n%s", progress.String())
	}
	for _, network := range []string{"tcp", "unix"} {
		db := openDB(t, inst, network)
		if got := queryValue(t, db, "SELECT CURRENT_USER()"); !strings.HasPrefix(got, inst.User()+"@") {
			t.Errorf("%s: connected as %q, want %s", network, got, inst.User())
		}
		if got := queryValue(t, db, "SELECT DATABASE()"); got != inst.Database() {
			t.Errorf("%s: database %q, want %q", network, got, inst.Database())
		}
	}
	db := openDB(t, inst, "tcp")
	if got := queryValue(t, db, "SELECT VERSION()"); !strings.HasPrefix(got, inst.Version()) {
		t.Errorf("VERSION() %q does not start with Version() %q", got, inst.Version())
	}
	if got := queryValue(t, db, "SELECT @@innodb_print_all_deadlocks"); got != "1" {
		t.Errorf("innodb_print_all_deadlocks = %s, want 1 (ON)", got)
	}
	if got := queryValue(t, db, "SELECT @@max_connections"); got != "200" {
		t.Errorf("max_connections = %s, want 200", got)
	}
	if got := queryValue(t, db, "SELECT @@bind_address"); got != "127.0.0.1" {
		t.Errorf("bind_address = %s, want 127.0.0.1 only", got)
	}
	if got := queryValue(t, db, "SELECT @@port"); got != strconv.Itoa(inst.Port()) {
		t.Errorf("port = %s, want %d", got, inst.Port())
	}
	// The run's user does everything events do: SET GLOBAL, KILL, PROCESS.
	execSQL(t, db, "SET GLOBAL innodb_lock_wait_timeout = 7", "CREATE TABLE t (id INT PRIMARY KEY)")
	if got := queryValue(t, db, "SELECT COUNT(*) FROM information_schema.PROCESSLIST"); got == "0" {
		t.Errorf("the run's user sees no sessions in the processlist")
	}
	// The password is the only way in.
	bad := inst.clientConfig("tcp")
	bad.Passwd = "wrong"
	if connector, err := mysql.NewConnector(bad); err == nil {
		if conn, err := connector.Connect(t.Context()); err == nil {
			conn.Close()
			t.Error("a wrong password was accepted")
		}
	}
	if inst.PID() == 0 || !serverproc.IsServerIn(inst.PID(), inst.Dir(), serverProgram) {
		t.Errorf("PID() = %d, not the mariadbd of %s", inst.PID(), inst.Dir())
	}
	if owner, err := os.ReadFile(filepath.Join(dir, serverproc.OwnerFileName)); err != nil ||
		!strings.HasPrefix(string(owner), strconv.Itoa(os.Getpid())+" ") {
		t.Errorf("owner file = %q, %v; want our pid %d first", owner, err, os.Getpid())
	}
	if _, err := os.Stat(filepath.Join(dir, initFileName)); !os.IsNotExist(err) {
		t.Errorf("the file with the password is still in %s (stat: %v)", dir, err)
	}
	if len(servertest.ProcessesIn(dir)) == 0 {
		t.Fatalf("no processes found in %s while the server runs: the /proc check is broken", dir)
	}
}

func TestRestartKeepsDataAndAppliesStaticSetting(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{Settings: map[string]string{"innodb-autoinc-lock-mode": "1"}})
	db := openDB(t, inst, "tcp")
	if got := queryValue(t, db, "SELECT @@innodb_autoinc_lock_mode"); got != "1" {
		t.Fatalf("innodb_autoinc_lock_mode = %s, want 1 from the options", got)
	}
	execSQL(t, db, "CREATE TABLE kept (id INT PRIMARY KEY)", "INSERT INTO kept VALUES (1), (2)")
	port, pid := inst.Port(), inst.PID()
	// innodb_autoinc_lock_mode cannot be set while the server runs.
	if _, err := db.ExecContext(t.Context(), "SET GLOBAL innodb_autoinc_lock_mode = 2"); err == nil {
		t.Fatal("SET GLOBAL innodb_autoinc_lock_mode succeeded: the test no longer shows a restart is needed")
	}
	if err := inst.Restart(t.Context(), map[string]string{"innodb_autoinc_lock_mode": "2"}); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if inst.Port() != port || inst.PID() == pid || inst.PID() == 0 {
		t.Errorf("after Restart: port %d (was %d), pid %d (was %d); want the same port and a new server",
			inst.Port(), port, inst.PID(), pid)
	}
	if got := queryValue(t, db, "SELECT @@innodb_autoinc_lock_mode"); got != "2" {
		t.Errorf("innodb_autoinc_lock_mode = %s after Restart, want 2", got)
	}
	if got := queryValue(t, db, "SELECT COUNT(*) FROM kept"); got != "2" {
		t.Errorf("rows after Restart = %s, want 2", got)
	}
	if got := inst.Settings()["innodb_autoinc_lock_mode"]; got != "2" {
		t.Errorf("Settings() keeps innodb_autoinc_lock_mode = %q, want 2", got)
	}
}

func TestRestartWithBadSettingReportsAndRecovers(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{})
	err := inst.Restart(t.Context(), map[string]string{"no_such_option": "1"})
	if err == nil || !strings.Contains(err.Error(), "no_such_option") {
		t.Fatalf("Restart with an unknown option = %v, want an error quoting the server log", err)
	}
	if inst.PID() != 0 {
		t.Errorf("PID() = %d after a failed restart, want 0", inst.PID())
	}
	if err := inst.Restart(t.Context(), nil); err != nil {
		t.Fatalf("Restart without the bad option: %v", err)
	}
	if got := queryValue(t, openDB(t, inst, "unix"), "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 = %s", got)
	}
}

func TestBadSettingFailsCleanly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil { // the server's user must reach it
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	_, err := Start(t.Context(), Options{Settings: map[string]string{"innodb_buffer_pool_size": "banana"}})
	if err == nil {
		t.Fatal("Start with a bad value succeeded")
	}
	if !strings.Contains(err.Error(), "server log") {
		t.Errorf("error does not show the server log:\n%v", err)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range after {
		if !contains(before, dir) {
			// Another test's instance may have appeared meanwhile: only
			// one whose owner is us and that has no server counts.
			if owner, _ := os.ReadFile(filepath.Join(dir, serverproc.OwnerFileName)); strings.HasPrefix(string(owner), strconv.Itoa(os.Getpid())+" ") &&
				len(servertest.ProcessesIn(dir)) == 0 {
				t.Errorf("failed Start left %s behind", dir)
			}
		}
	}
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestSettingsRejectedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings map[string]string
		want     string
	}{
		{"managed", map[string]string{"port": "3306"}, "chosen by the throwaway server"},
		{"managed, dashed", map[string]string{"bind-address": "0.0.0.0"}, "chosen by the throwaway server"},
		{"managed, loose", map[string]string{"loose-socket": "/tmp/s"}, "chosen by the throwaway server"},
		{"bad name", map[string]string{"a b": "1"}, "not a valid"},
		{"line break", map[string]string{"sql_mode": "a\n[client]"}, "line break"},
		{"twice", map[string]string{"query-cache-type": "1", "query_cache_type": "0"}, "given twice"},
	}
	for _, test := range tests {
		_, err := Start(t.Context(), Options{Settings: test.settings, BinDir: "/nonexistent"})
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: Start = %v, want an error saying %q", test.name, err, test.want)
		}
	}
}

func TestNoBinariesGivesInstallHint(t *testing.T) {
	t.Parallel()
	_, err := Start(t.Context(), Options{BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), serverProgram) {
		t.Errorf("Start with an empty BinDir = %v, want an error naming the missing programs", err)
	}
}

func TestOptionFileValues(t *testing.T) {
	t.Parallel()
	tests := []struct{ value, want string }{
		{"1", "1"},
		{"STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION"},
		{"a#b", `"a#b"`},               // # would start a comment
		{" padded ", `" padded "`},     // spaces at the ends would be trimmed
		{`C:\dir`, `"C:\\dir"`},        // \ starts an escape
		{`say "hi"`, `'say "hi"'`},     // the other quote
		{"semi;colon", `"semi;colon"`}, // ; too starts a comment
		{"128M", "128M"},
	}
	for _, test := range tests {
		if got := quoteOptionValue(test.value); got != test.want {
			t.Errorf("quoteOptionValue(%q) = %s, want %s", test.value, got, test.want)
		}
	}
}

// The values written to the option file are the values the server takes.
func TestOptionFileRoundTrips(t *testing.T) {
	t.Parallel()
	inst := startForTest(t, Options{Settings: map[string]string{
		"sql_mode":         "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION",
		"init_connect":     `SET @greeting = 'a#b\c'`,
		"query_cache_type": "1",
		"query_cache_size": "16M",
	}})
	db := openDB(t, inst, "tcp")
	for query, want := range map[string]string{
		"SELECT @@sql_mode":         "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION",
		"SELECT @@init_connect":     `SET @greeting = 'a#b\c'`,
		"SELECT @@query_cache_type": "ON",
		"SELECT @@query_cache_size": strconv.Itoa(16 << 20),
	} {
		if got := queryValue(t, db, query); got != want {
			t.Errorf("%s = %q, want %q", query, got, want)
		}
	}
}

func TestVersionFromBanner(t *testing.T) {
	t.Parallel()
	tests := []struct{ banner, want string }{
		{"mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)\n", "10.11.19"},
		{"/usr/sbin/mariadbd  Ver 11.4.2-MariaDB for Linux on x86_64 (MariaDB Server)\n", "11.4.2"},
	}
	for _, test := range tests {
		if got, ok := versionFromBanner(test.banner); !ok || got != test.want {
			t.Errorf("versionFromBanner(%q) = %q, %v; want %q", test.banner, got, ok, test.want)
		}
	}
	if got, ok := versionFromBanner("no version here"); ok {
		t.Errorf("versionFromBanner without a version = %q, true", got)
	}
}

// owner is how servertest starts this package's instances and finds their servers.
var owner = servertest.Owner{
	Env: "FIREDRILL_MDB_TEST_HELPER",
	Start: func(ctx context.Context, progress io.Writer) (string, func() error, error) {
		inst, err := Start(ctx, Options{Progress: progress})
		if err != nil {
			return "", nil, err
		}
		return inst.Dir(), inst.Stop, nil
	},
	Server:     reaper().ServerPID,
	ProcessDir: func(dir string) string { return dir },
	Settle:     15 * time.Second,
}

// TestHelperProcess is not a test: run by TestKilledOwnerIsReaped in a
// child process, it starts an instance, prints its directory and waits to
// be killed.
func TestHelperProcess(t *testing.T) { servertest.Helper(t, owner) }

func TestKilledOwnerIsReaped(t *testing.T) { servertest.KilledOwnerIsReaped(t, owner) }
