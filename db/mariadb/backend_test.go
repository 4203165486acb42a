package mariadb

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/backend"
	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/internal/testcert"
	"github.com/firedrill/firedrill/scenario"
)

// startServer starts a throwaway MariaDB that stands for a user's server;
// it is stopped when the test ends.
func startServer(t *testing.T) *mdbinstance.Instance {
	t.Helper()
	inst, err := mdbinstance.Start(t.Context(), mdbinstance.Options{})
	if err != nil {
		t.Fatalf("start MariaDB: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop MariaDB: %v", err)
		}
	})
	return inst
}

// dsnOf is inst's --dsn URL, naming database.
func dsnOf(inst *mdbinstance.Instance, database string) string {
	u := url.URL{Scheme: "mysql", User: url.UserPassword(inst.User(), inst.Password()), Host: inst.TCPAddr(), Path: "/" + database}
	return u.String()
}

// openDB opens inst as its user, in database.
func openDB(t *testing.T, inst *mdbinstance.Instance, database string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", inst.TCPAddr(), inst.User(), inst.Password(), database
	cfg.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	return db
}

// execAll runs statements on db.
func execAll(t *testing.T, db *sql.DB, statements ...string) {
	t.Helper()
	for _, s := range statements {
		if _, err := db.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// value is the first column of the first row of query.
func value(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	var v sql.NullString
	if err := db.QueryRowContext(t.Context(), query).Scan(&v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v.String
}

// loadScenario writes files (name → content) into a directory and loads
// scenario.yaml from it for a MariaDB target.
func loadScenario(t *testing.T, files map[string]string) *scenario.Scenario {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := backend.NewRegistry(New()).ScenarioOptions()
	opts.Kind = Kind
	path := filepath.Join(dir, "scenario.yaml")
	sc, err := scenario.Parse(path, []byte(files["scenario.yaml"]), opts)
	if err != nil {
		t.Fatalf("load the scenario: %v", err)
	}
	return sc
}

// runEvents runs the scenario's events, one after another, in the
// target's environment.
func runEvents(t *testing.T, tg backend.Target, sc *scenario.Scenario) []string {
	t.Helper()
	env := tg.(backend.Eventful).EventEnv(false, nil)
	var outcomes []string
	for _, spec := range sc.Events {
		ev, err := event.New(Backend{}.EventKinds(), spec)
		if err != nil {
			t.Fatal(err)
		}
		outcome, _, err := ev.Run(t.Context(), env, nil)
		if err != nil {
			t.Fatalf("event %s: %v", spec.Name, err)
		}
		outcomes = append(outcomes, outcome)
	}
	return outcomes
}

const workloadYAML = `
workloads:
  - name: oltp
    clients: 1
    scripts:
      - inline: "SELECT 1;"
`

// A setup statement the server refuses is named at its file:line:col, and
// nothing is left running after it.
func TestSetupErrorNamesFileLineCol(t *testing.T) {
	t.Parallel()
	sc := loadScenario(t, map[string]string{
		"scenario.yaml": "name: bad-setup\nduration: 1s\ntarget: {kind: mariadb}\nsetup:\n  sql: [{file: schema.sql}]\n" + workloadYAML,
		"schema.sql":    "-- the schema\nCREATE TABLE t (id INT PRIMARY KEY);\n\nINSERT INTO t VALUES (1);\nSELECT id\n  FRM t;\n",
	})
	tg, err := Backend{}.Open(t.Context(), backend.Spec{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	dir := tg.(*target).inst.Dir()
	err = tg.Setup(t.Context())
	if closeErr := tg.Close(false); closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	want := filepath.Join(filepath.Dir(sc.File), "schema.sql") + ":6:7: "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "1064") {
		t.Errorf("Setup = %v, want an error at %s…1064", err, want)
	}
	if _, statErr := os.Stat(dir); !os.IsNotExist(statErr) {
		t.Errorf("the embedded server's %s is still there after Close", dir)
	}
}

// A wrong password on a given server names host:port and says what to do.
func TestWrongPasswordSaysWhatToDo(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	u := url.URL{Scheme: "mysql", User: url.UserPassword(inst.User(), "wrong-password"), Host: inst.TCPAddr(), Path: "/shop"}
	sc := loadScenario(t, map[string]string{"scenario.yaml": "name: given\nduration: 1s\n" + workloadYAML})
	tg, err := Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, DSN: u.String()})
	if err == nil {
		tg.Close(false)
		t.Fatal("Open with a wrong password succeeded")
	}
	for _, want := range []string{inst.TCPAddr(), "1045", "check them in --dsn"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("error shows the password: %v", err)
	}
}

// On a user's server firedrill works in its own database: the user's
// tables of the same names and their rows are untouched by setup, and the
// global variables settings events change are put back by Close.
func TestGivenServerKeepsToItsDatabase(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	shop := openDB(t, inst, "")
	execAll(t, shop, "CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT PRIMARY KEY, qty INT)",
		"INSERT INTO shop.orders VALUES (1, 10), (2, 20)",
		"SET GLOBAL innodb_lock_wait_timeout = 50")
	sc := loadScenario(t, map[string]string{
		"scenario.yaml": "name: given\nduration: 1s\nsetup:\n  sql: [{file: setup.sql}]\n" + workloadYAML + `
events:
  - {kind: settings, at: 0s, settings: {innodb_lock_wait_timeout: 3}}
  - {kind: sql, at: 0s, sql: "UPDATE orders SET qty = 0"}
`,
		"setup.sql": "DROP TABLE IF EXISTS orders;\nCREATE TABLE orders (id INT PRIMARY KEY, qty INT);\nINSERT INTO orders VALUES (1, 1);\n",
	})
	if err := (Backend{}).Preflight(backend.Spec{Scenario: sc, DSN: dsnOf(inst, "shop")}); err != nil {
		t.Fatalf("Preflight: %v", err)
	}
	tg, err := Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsnOf(inst, "shop")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := tg.Setup(t.Context()); err != nil {
		tg.Close(false)
		t.Fatalf("Setup: %v", err)
	}
	runEvents(t, tg, sc)
	if got := value(t, shop, "SELECT @@GLOBAL.innodb_lock_wait_timeout"); got != "3" {
		t.Errorf("innodb_lock_wait_timeout = %s during the run, want 3", got)
	}
	if info := tg.Info(); strings.Contains(info.Address, inst.Password()) || info.Database != "firedrill" {
		t.Errorf("Info = %+v", info)
	}
	if err := tg.Close(false); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := value(t, shop, "SELECT GROUP_CONCAT(id, ':', qty ORDER BY id) FROM shop.orders"); got != "1:10,2:20" {
		t.Errorf("the user's shop.orders = %s after the run, want 1:10,2:20", got)
	}
	if got := value(t, shop, "SELECT GROUP_CONCAT(id, ':', qty) FROM firedrill.orders"); got != "1:0" {
		t.Errorf("firedrill.orders = %s, want 1:0 (setup and the sql event worked there)", got)
	}
	if got := value(t, shop, "SELECT @@GLOBAL.innodb_lock_wait_timeout"); got != "50" {
		t.Errorf("innodb_lock_wait_timeout = %s after the run, want 50 put back", got)
	}
}

// A run killed after a settings event leaves the change recorded; the
// next run (Open) or firedrill restore puts it back.
func TestRestoreAfterAKilledRun(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	db := openDB(t, inst, "")
	execAll(t, db, "SET GLOBAL max_connections = 180", "SET GLOBAL innodb_lock_wait_timeout = 50")
	sc := loadScenario(t, map[string]string{"scenario.yaml": "name: given\nduration: 1s\n" + workloadYAML + `
events:
  - {kind: settings, at: 0s, settings: {max_connections: 77, innodb_lock_wait_timeout: 4}}
`})
	tg, err := Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsnOf(inst, "")})
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, tg, sc) // and no Close: the run was killed
	// Someone changes one of them meanwhile: that one is left alone.
	execAll(t, db, "SET GLOBAL innodb_lock_wait_timeout = 9")
	var out strings.Builder
	if err := (Backend{}).Restore(t.Context(), dsnOf(inst, ""), "firedrill", &out); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := value(t, db, "SELECT @@GLOBAL.max_connections"); got != "180" {
		t.Errorf("max_connections = %s after restore, want 180", got)
	}
	if got := value(t, db, "SELECT @@GLOBAL.innodb_lock_wait_timeout"); got != "9" {
		t.Errorf("innodb_lock_wait_timeout = %s after restore, want 9 (someone else's) left alone", got)
	}
	for _, want := range []string{"max_connections: set back to 180", "innodb_lock_wait_timeout: left alone: changed to 9"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("restore said:\n%s\nwant %q", out.String(), want)
		}
	}
	out.Reset()
	if err := (Backend{}).Restore(t.Context(), dsnOf(inst, ""), "firedrill", &out); err != nil || !strings.Contains(out.String(), "nothing to restore") {
		t.Errorf("a second restore: %v, %q", err, out.String())
	}

	// Killed again; this time the next run's Open puts it back, and says so.
	tg, err = Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsnOf(inst, "")})
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, tg, sc)
	var log strings.Builder
	next, err := Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsnOf(inst, ""), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(false)
	if got := value(t, db, "SELECT @@GLOBAL.max_connections"); got != "180" {
		t.Errorf("max_connections = %s after the next run's Open, want 180", got)
	}
	if !strings.Contains(log.String(), "before the run: restored setting max_connections: set back to 180") {
		t.Errorf("the next run's log does not say what it restored:\n%s", log.String())
	}
}

// SQL that would leave firedrill's database on a given server is refused
// before anything runs, at its file:line:col.
func TestConfinementRefusesOtherDatabases(t *testing.T) {
	t.Parallel()
	sc := loadScenario(t, map[string]string{
		"scenario.yaml": "name: given\nduration: 1s\ntarget: {kind: mariadb, dsn: \"mysql://app:pw@127.0.0.1:1/shop\"}\nsetup:\n  sql: [{file: setup.sql}]\n" + workloadYAML,
		"setup.sql":     "CREATE TABLE t (id INT);\nINSERT INTO t SELECT id FROM shop.orders o WHERE o.id > 1;\nUSE shop;\nSET GLOBAL max_connections = 10;\nSELECT firedrill.t.id FROM firedrill.t;\n",
	})
	err := Backend{}.Preflight(backend.Spec{Scenario: sc})
	if err == nil {
		t.Fatal("Preflight accepted SQL outside the database")
	}
	path := filepath.Join(filepath.Dir(sc.File), "setup.sql")
	for _, want := range []string{path + ":2:30: names the database shop", path + ":3:1: USE", path + ":4:1: SET"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), ":5:") || strings.Contains(err.Error(), "names the database o") {
		t.Errorf("error refuses firedrill's own names or an alias:\n%v", err)
	}
	if err := (Backend{}).Preflight(backend.Spec{Scenario: sc, AllowOutsideSchema: true}); err != nil {
		t.Errorf("Preflight with AllowOutsideSchema: %v", err)
	}
}

// The embedded server takes the scenario's options, is sized for the run,
// and records its variables.
func TestEmbeddedSettings(t *testing.T) {
	t.Parallel()
	sc := loadScenario(t, map[string]string{"scenario.yaml": "name: emb\nduration: 1s\ntarget:\n  kind: mariadb\n  settings: {innodb_autoinc_lock_mode: 1, query_cache_type: 1}\n" + workloadYAML +
		"events:\n  - {kind: terminate, at: 0s, workload: oltp}\n"})
	var log strings.Builder
	tg, err := Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, Connections: 300, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(false)
	settings, err := tg.(backend.Configured).Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"innodb_autoinc_lock_mode": "1", "query_cache_type": "ON", "max_connections": "320", "innodb_print_all_deadlocks": "ON",
		"performance_schema": "ON"} {
		if settings[name] != want {
			t.Errorf("%s = %q, want %q", name, settings[name], want)
		}
	}
	if !strings.Contains(log.String(), "starting MariaDB") || tg.Info().ServerVersion == "" || !tg.Info().Embedded {
		t.Errorf("log %q, info %+v", log.String(), tg.Info())
	}
}

// PostgreSQL's extended protocol is refused at its place in the file.
func TestExtendedModeRefused(t *testing.T) {
	t.Parallel()
	sc := loadScenario(t, map[string]string{"scenario.yaml": "name: m\nduration: 1s\ntarget: {kind: mariadb}\nworkloads:\n  - name: w\n    clients: 1\n    mode: extended\n    scripts: [{inline: \"SELECT 1;\"}]\n"})
	err := Backend{}.Preflight(backend.Spec{Scenario: sc})
	if err == nil || !strings.Contains(err.Error(), "scenario.yaml:7:11: mode: extended is PostgreSQL's protocol") {
		t.Errorf("Preflight = %v", err)
	}
	sc = loadScenario(t, map[string]string{"scenario.yaml": "name: m\nduration: 1s\ntarget: {kind: mariadb}\nworkloads:\n  - name: w\n    clients: 1\n    mode: prepared\n    scripts: [{inline: \"SELECT 1;\"}]\n"})
	if err := (Backend{}).Preflight(backend.Spec{Scenario: sc}); err != nil {
		t.Errorf("Preflight of mode: prepared = %v", err)
	}
	// The mode given on the command line (--set) is judged too.
	opts := backend.NewRegistry(New()).ScenarioOptions()
	set, _ := scenario.ParseOverride("workloads.w.mode=extended")
	opts.Kind, opts.Overrides = Kind, []scenario.Override{set}
	sc, err = scenario.Parse("scenario.yaml", []byte("name: m\nduration: 1s\ntarget: {kind: mariadb}\nworkloads:\n  - name: w\n    clients: 1\n    mode: prepared\n    scripts: [{inline: \"SELECT 1;\"}]\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Backend{}).Preflight(backend.Spec{Scenario: sc}); err == nil || !strings.Contains(err.Error(), "mode: extended is PostgreSQL's protocol") {
		t.Errorf("Preflight of --set workloads.w.mode=extended = %v", err)
	}
}

func TestParseDSN(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dsn, net, addr, user, database, err string
	}{
		{dsn: "mysql://app:pw@127.0.0.1:3307/shop", net: "tcp", addr: "127.0.0.1:3307", user: "app", database: "shop"},
		{dsn: "mariadb://app@db/shop", net: "tcp", addr: "db:3306", user: "app", database: "shop"},
		{dsn: "mysql://app:pw@localhost/shop?socket=/run/mysqld/mysqld.sock", net: "unix", addr: "/run/mysqld/mysqld.sock", user: "app", database: "shop"},
		{dsn: "mysql://app:pw@[::1]:3306/", net: "tcp", addr: "[::1]:3306", user: "app"},
		{dsn: "mysql://127.0.0.1/shop", err: "names no user"},
		{dsn: "mysql://app@127.0.0.1/shop?tls=maybe", err: "tls=skip-verify"},
		{dsn: "mysql://app@127.0.0.1/shop?tls=true&ssl-ca=/nonexistent/ca.pem", err: "ssl-ca=/nonexistent/ca.pem: no such file"},
		{dsn: "mysql://app@127.0.0.1/shop?tls=true&ssl-ca=testdata/not-a-ca.pem", err: "holds no PEM certificate"},
		{dsn: "mysql://app@127.0.0.1/shop?tls=preferred&ssl-ca=/x.pem", err: "verifies nothing"},
		{dsn: "mysql://app@localhost/shop?socket=/run/mysqld/mysqld.sock&tls=true", err: "unix socket has no host name"},
		{dsn: "mysql://app@127.0.0.1/shop?charset=latin1", err: `the parameter "charset"`},
		{dsn: "postgres://app@127.0.0.1/shop", err: "must start with mysql://"},
	}
	for _, test := range tests {
		got, err := parseDSN(test.dsn)
		if test.err != "" {
			if err == nil || !strings.Contains(err.Error(), test.err) {
				t.Errorf("parseDSN(%s) = %v, want an error saying %q", test.dsn, err, test.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseDSN(%s): %v", test.dsn, err)
			continue
		}
		if got.cfg.Net != test.net || got.cfg.Addr != test.addr || got.cfg.User != test.user || got.Database != test.database {
			t.Errorf("parseDSN(%s) = %s %s %s %s", test.dsn, got.cfg.Net, got.cfg.Addr, got.cfg.User, got.Database)
		}
	}
}

// The tls parameter sets the driver's TLS (for setup, samplers and
// events) and the load target's alike, as go-sql-driver/mysql reads it.
func TestParseDSNTLS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query, driver      string
		on, skip, optional bool
	}{
		{query: "", driver: ""},
		{query: "tls=false", driver: ""},
		{query: "tls=true", driver: "true", on: true},
		{query: "tls=skip-verify", driver: "skip-verify", on: true, skip: true},
		{query: "tls=preferred", driver: "preferred", on: true, skip: true, optional: true},
	}
	for _, test := range tests {
		srv, err := parseDSN("mysql://app:pw@db.example.com:3307/shop?" + test.query)
		if err != nil {
			t.Errorf("?%s: %v", test.query, err)
			continue
		}
		if srv.cfg.TLSConfig != test.driver || (srv.tls != nil) != test.on || srv.tlsOptional != test.optional {
			t.Errorf("?%s: driver tls=%q, target TLS %v (optional %v)", test.query, srv.cfg.TLSConfig, srv.tls != nil, srv.tlsOptional)
			continue
		}
		if srv.tls != nil && (srv.tls.InsecureSkipVerify != test.skip || !test.skip && srv.tls.ServerName != "db.example.com") {
			t.Errorf("?%s: target TLS verifies %v, server name %q", test.query, !srv.tls.InsecureSkipVerify, srv.tls.ServerName)
		}
		// What samplers and events get: the driver's own DSN, read back.
		back, err := mysql.ParseDSN(srv.cfg.FormatDSN())
		if err != nil {
			t.Errorf("?%s: the driver's DSN does not read back: %v", test.query, err)
			continue
		}
		if (back.TLS != nil) != test.on {
			t.Errorf("?%s: the driver's DSN %s lost TLS", test.query, srv.cfg.FormatDSN())
		}
		if strings.Contains(address(srv.cfg), "pw") {
			t.Errorf("?%s: the address shows the password", test.query)
		}
	}
	// ssl-ca names a registered configuration, which the driver's DSN keeps.
	ca, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := parseDSN("mysql://app:pw@127.0.0.1/shop?ssl-ca=" + url.QueryEscape(ca.CA))
	if err != nil {
		t.Fatal(err)
	}
	back, err := mysql.ParseDSN(srv.cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	if back.TLS == nil || back.TLS.RootCAs == nil || back.TLS.ServerName != "127.0.0.1" || srv.tls.RootCAs == nil {
		t.Errorf("ssl-ca alone: driver TLS %+v, target roots %v", back.TLS, srv.tls.RootCAs != nil)
	}
}
