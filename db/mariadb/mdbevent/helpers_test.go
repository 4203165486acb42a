package mdbevent

import (
	"context"
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"

	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/event/eventtest"
	"github.com/firedrill/firedrill/scenario"
)

// startServer starts a throwaway MariaDB with settings that is stopped
// when the test ends.
func startServer(t *testing.T, settings map[string]string) *mdbinstance.Instance {
	t.Helper()
	inst, err := mdbinstance.Start(t.Context(), mdbinstance.Options{Settings: settings})
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

// configOf reaches inst as its user, in its database.
func configOf(inst *mdbinstance.Instance) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", inst.TCPAddr(), inst.User(), inst.Password(), inst.Database()
	cfg.Logger = &mysql.NopLogger{}
	return cfg
}

// embeddedEnv is the Env the backend gives events on the embedded server.
func embeddedEnv(inst *mdbinstance.Instance) *event.Env {
	return &event.Env{
		ConnString: configOf(inst).FormatDSN(),
		Restart:    func(ctx context.Context) error { return inst.Restart(ctx, nil) },
		DataDir:    inst.DataDir(),
		AppName:    func(workload string) string { return "firedrill:" + workload },
		Backend:    &Target{Config: configOf(inst), Restart: inst.Restart, Keep: inst.Keep},
	}
}

// givenEnv is the Env the backend gives events on a given server.
func givenEnv(inst *mdbinstance.Instance) *event.Env {
	return &event.Env{
		ConnString: configOf(inst).FormatDSN(),
		AppName:    func(workload string) string { return "firedrill:" + workload },
		Backend:    &Target{Config: configOf(inst), RestoreDatabase: "firedrill"},
	}
}

// openDB opens inst as its user.
func openDB(t *testing.T, inst *mdbinstance.Instance) *sql.DB {
	t.Helper()
	connector, err := mysql.NewConnector(configOf(inst))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	return db
}

// value is the first column of the first row of query ("" for none).
func value(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	var v sql.NullString
	err := db.QueryRowContext(t.Context(), query, args...).Scan(&v)
	if err == sql.ErrNoRows {
		return ""
	}
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v.String
}

// mustNew builds the one event of a scenario written as spec.
func mustNew(t *testing.T, spec string) event.Event {
	t.Helper()
	sc, err := parse(spec)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	ev, err := event.New(kinds, sc.Events[0])
	if err != nil {
		t.Fatalf("New(%s): %v", spec, err)
	}
	return ev
}

// parse loads a scenario with one event of MariaDB's kinds.
func parse(spec string) (*scenario.Scenario, error) {
	return eventtest.ParseEvent(spec, options())
}

// options are the scenario options of MariaDB's kinds and the neutral ones.
func options() scenario.Options {
	opts := event.ScenarioOptions(append(Kinds(), event.Kinds()...))
	return opts
}

// openTagged opens a session on inst with program_name set, as a
// workload's client does.
func openTagged(t *testing.T, inst *mdbinstance.Instance, programName string) *sql.Conn {
	t.Helper()
	cfg := configOf(inst)
	cfg.ConnectionAttributes = "program_name:" + programName
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
