// Package mariadb is firedrill's MariaDB/MySQL backend: a throwaway
// MariaDB (db/mariadb/instance) or a given server (--dsn mysql://…) confined
// to firedrill's own database, the engine's targets (db/mariadb/client),
// setup SQL run as the mysql client runs a file, the events' environment
// (db/mariadb/mdbevent), the settings snapshot, and putting back on a
// given server what settings events changed.
//
// go-sql-driver/mysql, which setup, settings and events use, reads no
// password from outside the connection string (no ~/.my.cnf, no
// MYSQL_PWD): the backend needs no Passworder, and firedrill masks the
// password written in --dsn.
package mariadb

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"github.com/firedrill/firedrill/db/mariadb/rules"
	"github.com/firedrill/firedrill/diagnose"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/backend"
	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/db/mariadb/mdbdialect"
	"github.com/firedrill/firedrill/db/mariadb/mdbevent"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/timeline"
)

// Kind is the backend's name in scenarios and run.json.
const Kind = "mariadb"

// errorCodes is what the target's error codes are: SQLSTATE and the
// server's error number ("40001/1213").
const errorCodes = "SQLSTATE/number"

// settingsSource is the timeline source of the settings snapshots.
const settingsSource = "mariadb_variables"

// Backend is MariaDB's backend.Backend; it serves MySQL servers given with
// --dsn too.
type Backend struct{}

var (
	_ backend.Backend     = Backend{}
	_ backend.Ruled       = Backend{}
	_ backend.Schemed     = Backend{}
	_ backend.Keyed       = Backend{}
	_ backend.Dialected   = Backend{}
	_ backend.Preflighter = Backend{}
	_ backend.EventKinds  = Backend{}
	_ backend.Restorer    = Backend{}
	_ backend.Granter     = Backend{}
)

// New returns the MariaDB backend.
func New() Backend { return Backend{} }

// Kind is "mariadb".
func (Backend) Kind() string { return Kind }

// Rules are the diagnosis rules of mariadb runs (db/mariadb/rules).
func (Backend) Rules() []diagnose.Rule { return mariadbrules.Rules() }

// Schemes are the URL schemes of a given server.
func (Backend) Schemes() []string { return []string{"mysql", "mariadb"} }

// Keys are the kind-specific scenario keys it takes: all but pgbench's
// tables.
func (Backend) Keys() []string {
	return []string{"target.settings", "setup.sql", "setup.schema", "workloads.mode", "workloads.settings"}
}

// Dialect is MySQL's SQL: the scripts' commands are lexed as the mysql
// client lexes them.
func (Backend) Dialect() script.Dialect { return mdbdialect.Script() }

// EventKinds are MariaDB's own kinds of event.
func (Backend) EventKinds() []event.Kind { return mdbevent.Kinds() }

// Open starts the embedded server (max_connections sized for the
// workloads, the scenario's settings) or takes the given one, whose
// settings a killed run may have left changed: those are put back first.
func (Backend) Open(ctx context.Context, spec backend.Spec) (backend.Target, error) {
	sc := spec.Scenario
	tg := &target{spec: spec, sc: sc, logf: backend.Logf(spec.Log), redact: spec.Redact}
	if tg.redact == nil {
		tg.redact = func(s string) string { return s }
	}
	if dsn := backend.GivenDSN(spec); dsn != "" {
		given, err := parseDSN(dsn)
		if err != nil {
			return nil, err
		}
		tg.database = databaseOf(sc)
		tg.cfg = given.cfg
		tg.cfg.DBName = ""
		tg.tls, tg.tlsOptional = given.tls, given.tlsOptional
		tg.info = timeline.Target{Kind: Kind, Address: address(given.cfg), Database: tg.database, ErrorCodes: errorCodes, Product: "MariaDB/MySQL"}
		tg.user, tg.userTLS, tg.userTLSOptional = tg.cfg, tg.tls, tg.tlsOptional
		if err := tg.restoreSettings(ctx, "before the run", restoreWait); err != nil {
			return nil, err
		}
		if err := tg.confine(ctx); err != nil {
			return nil, err
		}
		return tg, nil
	}
	settings := map[string]string{}
	if spec.Connections+20 > 200 {
		settings["max_connections"] = fmt.Sprint(spec.Connections + 20)
	}
	for _, ev := range sc.Events {
		if mdbevent.NeedsPerformanceSchema(ev) {
			settings["performance_schema"] = "ON"
		}
	}
	maps.Copy(settings, sc.Target.Settings)
	inst, err := backend.KeptServer(spec.Keep,
		func() (*mdbinstance.Instance, error) {
			return mdbinstance.Start(ctx, mdbinstance.Options{Settings: settings, Progress: spec.Log,
				SlowDisk: event.WantsSlowDisk(sc.Events)})
		},
		func(inst *mdbinstance.Instance) error { return readyKept(ctx, inst, settings, tg.logf) },
		(*mdbinstance.Instance).Stop)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded MariaDB: %w", err)
	}
	tg.inst = inst
	tg.database = inst.Database()
	tg.cfg = mysql.NewConfig()
	tg.cfg.Logger = &mysql.NopLogger{}
	tg.cfg.Net, tg.cfg.Addr = "tcp", inst.TCPAddr()
	tg.cfg.User, tg.cfg.Passwd = inst.User(), inst.Password()
	tg.user = tg.cfg
	if spec.Secret != nil {
		spec.Secret(inst.Password()) // shell events get it in FIREDRILL_CONNSTRING
	}
	tg.info = timeline.Target{Kind: Kind, Embedded: true, Address: inst.TCPAddr(), Database: inst.Database(),
		ServerVersion: inst.Version(), DataDir: inst.DataDir(), ErrorCodes: errorCodes, Product: "MariaDB"}
	return tg, nil
}

// readyKept readies the server the run before kept (--reuse-server) for
// this run: up, and restarted when this run wants settings it lacks (more
// connections than it allows).
func readyKept(ctx context.Context, inst *mdbinstance.Instance, settings map[string]string, logf func(string, ...any)) error {
	if inst.PID() == 0 {
		return errors.New("the kept server is down")
	}
	want, err := mdbinstance.CanonicalSettings(settings)
	if err != nil {
		return err
	}
	if change := backend.RestartSettings(inst.Settings(), want, "max_connections"); len(change) > 0 {
		logf("restarting the kept MariaDB for this run's settings")
		return inst.Restart(ctx, change)
	}
	logf("reusing the MariaDB the run before kept (pid %d), its setup done", inst.PID())
	return nil
}

// databaseOf is the database firedrill works in on a given server: the
// scenario's setup.schema, "firedrill" by default.
func databaseOf(sc *scenario.Scenario) string {
	if sc.Setup.Schema != "" {
		return sc.Setup.Schema
	}
	return scenario.DefaultSchema
}

// target is one run's MariaDB or MySQL.
type target struct {
	spec   backend.Spec
	sc     *scenario.Scenario
	logf   func(string, ...any)
	redact func(string) string
	// cfg reaches the server as the run's user, without a database
	// (connections add it): the embedded server's user, or the URL's, the
	// admin of a given server.
	cfg *mysql.Config
	// tls is the load target's TLS, from the URL as cfg's TLSConfig is
	// (nil: none); tlsOptional for tls=preferred.
	tls         *tls.Config
	tlsOptional bool
	// user is who setup, workloads and user-written SQL in events run as,
	// without a database: on a given server the confined account (made
	// for the run, or --run-as), else cfg; userTLS and userTLSOptional
	// are its load target's TLS.
	user            *mysql.Config
	userTLS         *tls.Config
	userTLSOptional bool
	// account is the confined account the run made, dropped at Close;
	// nil when it made none.
	account *confinedAccount
	// settingsFailed holds why settings events failed on a given server:
	// Close ends the run failed with it.
	settingsFailedMu sync.Mutex
	settingsFailed   []error
	inst             *mdbinstance.Instance // the embedded server; nil for a given one
	database         string                // where setup, workloads and events work
	info             timeline.Target
	// outsideBefore fingerprints the other databases' tables before
	// setup, on a given server.
	outsideBefore map[string]string

	dbOnce sync.Once
	db     *sql.DB // setup and the shard marks, as user, in database
	dbErr  error

	adminOnce sync.Once
	adminDB   *sql.DB // the settings snapshot, as cfg
	adminErr  error
	// recorded is set once a settings event of this run records a
	// variable to restore: the end of a run that changed none has
	// nothing to restore (a killed run's leftovers are restored at Open).
	recorded atomic.Bool
}

var (
	_ backend.Target     = (*target)(nil)
	_ backend.Configured = (*target)(nil)
	_ backend.Eventful   = (*target)(nil)
)

func (tg *target) Info() timeline.Target { return tg.info }

// config is how to reach the server in database ("" for none).
func (tg *target) config(database string) *mysql.Config {
	cfg := tg.cfg.Clone()
	cfg.DBName = database
	return cfg
}

// userConfig is how user-written SQL reaches the server in database ("" for none).
func (tg *target) userConfig(database string) *mysql.Config {
	cfg := tg.user.Clone()
	cfg.DBName = database
	return cfg
}

// adminHandle is the target's connection pool as cfg, without a database.
func (tg *target) adminHandle() (*sql.DB, error) {
	tg.adminOnce.Do(func() {
		tg.adminDB, tg.adminErr = tg.plainHandle()
		if tg.adminDB != nil {
			tg.adminDB.SetMaxOpenConns(2)
		}
	})
	return tg.adminDB, tg.adminErr
}

// handle is the connection pool of setup and the shard marks, as user, in
// the target's database.
func (tg *target) handle() (*sql.DB, error) {
	tg.dbOnce.Do(func() {
		connector, err := mysql.NewConnector(tg.userConfig(tg.database))
		if err != nil {
			tg.dbErr = fmt.Errorf("connection settings: %w", err)
			return
		}
		tg.db = sql.OpenDB(connector)
		tg.db.SetMaxOpenConns(2)
	})
	return tg.db, tg.dbErr
}

// Workload makes the engine's target of one workload: the MySQL protocol
// (simple text queries or server-side prepared statements), its session
// variables, in the run's database.
func (tg *target) Workload(spec *scenario.Workload, scripts []*script.Script, appName string) (backend.Workload, error) {
	mode := spec.Mode
	switch mode {
	case "", "simple":
		mode = "simple"
	case "prepared":
	default:
		return backend.Workload{}, fmt.Errorf("workload %s: mode %s: MariaDB's protocol has simple (text queries) and prepared (server-side prepared statements)", spec.Name, mode)
	}
	t, err := newWorkloadTarget(workloadConfig{
		Network: tg.user.Net, Addr: tg.user.Addr, User: tg.user.User, Password: tg.user.Passwd,
		Database: tg.database, Mode: mode, Session: maps.Clone(spec.Settings), AppName: appName,
		TLS: tg.userTLS, TLSOptional: tg.userTLSOptional,
	})
	if err != nil {
		return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, err)
	}
	return backend.Workload{Target: t, Mode: mode}, nil
}

// Settings reads the server's global variables (SHOW GLOBAL VARIABLES),
// and notes the server's version for Info.
func (tg *target) Settings(ctx context.Context) (map[string]string, error) {
	db, err := tg.adminHandle()
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL VARIABLES")
	if err != nil {
		return nil, fmt.Errorf("read the server's variables: %w", err)
	}
	defer rows.Close()
	settings := map[string]string{}
	for rows.Next() {
		var name string
		var value sql.NullString
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("read the server's variables: %w", err)
		}
		settings[strings.ToLower(name)] = value.String
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the server's variables: %w", err)
	}
	if tg.info.ServerVersion == "" {
		tg.info.ServerVersion = settings["version"]
		tg.info.Product = productOf(settings["version"])
	}
	return settings, nil
}

// SettingsSource is the source of the snapshots taken after a settings
// event.
func (tg *target) SettingsSource() string { return settingsSource }

// EventEnv gives events the server: user-written SQL (and shell events'
// connection string) as the run's user in the run's database, firedrill's
// own statements as cfg; on the embedded server its data directory and
// restarts (with options, for static settings); on a given one, where
// settings events record what to put back, whose sessions terminate may
// kill, and the run's failure when a settings event fails.
func (tg *target) EventEnv(allowShell bool, appName func(string) string) *event.Env {
	cfg := tg.userConfig(tg.database)
	env := &event.Env{ConnString: cfg.FormatDSN(), AllowShell: allowShell, AppName: appName}
	mt := &mdbevent.Target{Config: cfg, Admin: tg.config(tg.database)}
	if tg.inst != nil {
		inst := tg.inst
		env.DataDir = inst.DataDir()
		env.SlowDisk = inst.SlowDisk()
		env.Restart = func(ctx context.Context) error { return inst.Restart(ctx, nil) }
		mt.Restart = inst.Restart
		mt.Keep = inst.Keep
	} else {
		mt.Admin = tg.config("")
		mt.RestoreDatabase = mdbevent.RecordsDatabase
		mt.Failed = tg.settingsFailure
		mt.OnRecord = func() { tg.recorded.Store(true) }
		if !tg.spec.AllowOutsideSchema {
			mt.Account = tg.user.User
		}
	}
	env.Backend = mt
	return env
}

// Close stops and removes the embedded server; on a given server it puts
// back the settings the run changed and says whether anything outside
// firedrill's database changed. A run that found the server frozen gets
// one short try.
func (tg *target) Close(frozen bool) error {
	if tg.db != nil {
		defer tg.db.Close()
	}
	if tg.adminDB != nil {
		defer tg.adminDB.Close()
	}
	if tg.inst != nil {
		if tg.spec.Keep.Leave(frozen) {
			return nil // kept running for the next run (--reuse-server)
		}
		if err := tg.inst.Stop(); err != nil {
			return fmt.Errorf("stopping the embedded server: %w", err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeWait(frozen))
	defer cancel()
	var err error
	if tg.recorded.Load() {
		err = tg.restoreSettings(ctx, "after the run", closeWait(frozen))
	}
	if !frozen {
		tg.checkOutsideAfter(ctx)
	}
	if frozen {
		// A server that does not answer cannot drop the account either:
		// trying would only spend the little time left before the deadline.
		return errors.Join(tg.failedSettings(), err, tg.leaveAccount())
	}
	return errors.Join(tg.failedSettings(), err, tg.dropAccount(ctx))
}

// settingsFailure records why a settings event failed on a given server
// (it put back what it changed): the run ends failed with it.
func (tg *target) settingsFailure(err error) {
	tg.settingsFailedMu.Lock()
	defer tg.settingsFailedMu.Unlock()
	tg.settingsFailed = append(tg.settingsFailed, err)
}

// failedSettings is why the run's settings events failed, nil if none did.
func (tg *target) failedSettings() error {
	tg.settingsFailedMu.Lock()
	defer tg.settingsFailedMu.Unlock()
	if len(tg.settingsFailed) == 0 {
		return nil
	}
	return fmt.Errorf("a settings event failed, so the run did: %w", errors.Join(tg.settingsFailed...))
}

// productOf names the server a VERSION() belongs to: MariaDB's say so
// ("10.11.19-MariaDB-0+deb12u1"), MySQL's do not ("8.0.36").
func productOf(version string) string {
	if strings.Contains(version, "MariaDB") {
		return "MariaDB"
	}
	return "MySQL"
}
