// Package postgres is firedrill's PostgreSQL backend: a throwaway server
// (db/postgres/instance) or a given one confined to firedrill's schema, the
// engine's targets (db/postgres/client), setup (pgbench tables, SQL), the
// samplers (db/postgres/sampler, sampler/host) with their cadence, the
// events' environment, the settings snapshot, and the end-of-run plans of
// the top statements. Its folder, db/postgres, holds everything firedrill
// knows of PostgreSQL (docs/architecture.md).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/firedrill/firedrill/db/postgres/rules"
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/backend"
	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	pginstance "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/db/postgres/pgdialect"
	"github.com/firedrill/firedrill/db/postgres/pgevent"
	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	pgsampler "github.com/firedrill/firedrill/db/postgres/sampler"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/timeline"
)

// Kind is the backend's name in scenarios and run.json.
const Kind = "postgres"

// product names the server in reports (timeline.Target.Product).
const product = "PostgreSQL"

// errorCodes is what PostgreSQL calls its error codes.
const errorCodes = "SQLSTATE"

// Backend is PostgreSQL's backend.Backend.
type Backend struct{}

var (
	_ backend.Backend     = Backend{}
	_ backend.Ruled       = Backend{}
	_ backend.Schemed     = Backend{}
	_ backend.Keyed       = Backend{}
	_ backend.Preflighter = Backend{}
	_ backend.Passworder  = Backend{}
	_ backend.Dialected   = Backend{}
)

// New returns the PostgreSQL backend.
func New() Backend { return Backend{} }

// Password is what libpq's rules (pgconn) find for connString: written in
// it, or from PGPASSWORD, a passfile or a service file.
func (Backend) Password(connString string) string {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return ""
	}
	return cfg.Password
}

// Kind is "postgres".
func (Backend) Kind() string { return Kind }

// Dialect is pgbench's: SQL lexed and split as psql does it.
func (Backend) Dialect() script.Dialect { return pgdialect.Script() }

// Rules are the diagnosis rules of postgres runs (db/postgres/rules).
func (Backend) Rules() []diagnose.Rule { return pgrules.Rules() }

// Schemes are libpq's URL schemes; a key/value conninfo has none and is
// PostgreSQL's too (the default kind).
func (Backend) Schemes() []string { return []string{"postgres", "postgresql"} }

// Keys are every kind-specific scenario key: PostgreSQL takes them all.
func (Backend) Keys() []string {
	return []string{"target.settings", "setup.pgbench", "setup.sql", "setup.schema", "workloads.mode", "workloads.settings"}
}

// Preflight refuses, before anything runs, SQL that would reach outside
// firedrill's schema on a given server (it knows only public as another
// schema; Setup checks against the server's own list).
func (Backend) Preflight(spec backend.Spec) error {
	sc := spec.Scenario
	given := spec.DSN != "" || !sc.Target.Embedded()
	if !given || sc.Setup.Schema == "public" || spec.AllowOutsideSchema || spec.PrivilegesOnly {
		return nil
	}
	if problems := ConfinementProblems(sc, nil); len(problems) > 0 {
		return fmt.Errorf("on a given server this scenario would reach outside the schema %s:\n  %s",
			sc.Setup.Schema, joinLines(problems))
	}
	return nil
}

// Open starts the embedded server (max_connections sized for the
// workloads, the scenario's settings) or takes the given one, whose
// settings a killed run may have left changed: those are restored first.
func (Backend) Open(ctx context.Context, spec backend.Spec) (backend.Target, error) {
	sc := spec.Scenario
	tg := &target{spec: spec, sc: sc, logf: backend.Logf(spec.Log), redact: spec.Redact}
	if tg.redact == nil {
		tg.redact = func(s string) string { return s }
	}
	if dsn := backend.GivenDSN(spec); dsn != "" {
		tg.connString = dsn
		tg.info = timeline.Target{Kind: Kind, Product: product, Address: tg.redact(dsn), ErrorCodes: errorCodes}
		tg.schema = sc.Setup.Schema
		if tg.schema == "" {
			tg.schema = scenario.DefaultSchema
		}
		if err := tg.restoreSettings("before the run", restoreWait); err != nil {
			return nil, err
		}
		if err := tg.openConfined(ctx); err != nil {
			return nil, err
		}
		return tg, nil
	}
	settings := map[string]string{}
	if spec.Connections+20 > 100 {
		settings["max_connections"] = fmt.Sprint(spec.Connections + 20)
	}
	for k, v := range sc.Target.Settings {
		settings[k] = v
	}
	inst, err := backend.KeptServer(spec.Keep,
		func() (*pginstance.Instance, error) {
			return pginstance.Start(ctx, pginstance.Options{Settings: settings, Progress: spec.Log})
		},
		func(inst *pginstance.Instance) error { return readyKept(ctx, inst, settings, tg.logf) },
		(*pginstance.Instance).Stop)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded PostgreSQL: %w", err)
	}
	tg.inst, tg.connString, tg.userConnString = inst, inst.ConnString(), inst.ConnString()
	tg.info = timeline.Target{Kind: Kind, Product: product, Embedded: true, Address: inst.TCPAddr(),
		Database: inst.Database(), ServerVersion: inst.Version(), DataDir: inst.DataDir(), ErrorCodes: errorCodes}
	return tg, nil
}

// readyKept readies the server the run before kept (--reuse-server) for
// this run: up, and restarted when this run wants settings it lacks (more
// connections than it allows).
func readyKept(ctx context.Context, inst *pginstance.Instance, settings map[string]string, logf func(string, ...any)) error {
	if inst.PID() == 0 {
		return errors.New("the kept server is down")
	}
	if change := backend.RestartSettings(inst.Settings(), settings, "max_connections"); len(change) > 0 {
		logf("restarting the kept PostgreSQL for this run's settings")
		return inst.Restart(ctx, change)
	}
	logf("reusing the PostgreSQL the run before kept (pid %d), its setup done", inst.PID())
	return nil
}

// target is one run's PostgreSQL.
type target struct {
	spec   backend.Spec
	sc     *scenario.Scenario
	logf   func(string, ...any)
	redact func(string) string
	// connString is the admin connection (the user's DSN, or the
	// embedded server's): firedrill's own fixed statements only.
	connString string
	// userConnString is where setup, workloads and the scenario's SQL
	// run: on a confined given server the run's role (or --run-as),
	// else connString.
	userConnString string
	// role is the login role this run made (nil with --run-as,
	// --allow-outside-schema or the embedded server).
	role   *runRole
	inst   *pginstance.Instance // the embedded server; nil for a given one
	schema string               // a given server: the schema setup, workloads and events keep to
	// outsideBefore fingerprints the objects outside schema before setup.
	outsideBefore map[string]string
	set           *pgsampler.Set
	info          timeline.Target
	// called are the names the workloads' scripts may call as functions:
	// the end-of-run evidence reads the bodies of those that are.
	called map[string]bool
	// recorded is set once a settings event of this run records a
	// setting to restore: the end of a run that changed none has nothing
	// to restore (a killed run's leftovers are restored at Open).
	recorded atomic.Bool
}

var (
	_ backend.Target     = (*target)(nil)
	_ backend.Sampled    = (*target)(nil)
	_ backend.Configured = (*target)(nil)
	_ backend.Eventful   = (*target)(nil)
	_ backend.Evidenced  = (*target)(nil)
	_ engine.Target      = (*pgtarget.Target)(nil)
)

func (tg *target) Info() timeline.Target { return tg.info }

// Workload makes the engine's target: the workload's protocol, its
// session settings, and on a given server firedrill's schema alone on the
// search path.
func (tg *target) Workload(spec *scenario.Workload, scripts []*script.Script, appName string) (backend.Workload, error) {
	mode := pgtarget.Simple
	if spec.Mode != "" {
		var err error
		if mode, err = pgtarget.ParseQueryMode(spec.Mode); err != nil {
			return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, err)
		}
	}
	if mode != pgtarget.Simple {
		for _, s := range scripts {
			if err := s.CheckExtended(); err != nil {
				return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, err)
			}
		}
	}
	t, err := pgtarget.NewTarget(tg.userConnString, mode, appName)
	if err != nil {
		return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, err)
	}
	if tg.confined() {
		t.SetParam("search_path", quoteIdent(tg.schema))
	}
	for k, v := range spec.Settings {
		t.SetParam(k, v)
	}
	if tg.called == nil {
		tg.called = map[string]bool{}
	}
	for _, s := range scripts {
		for _, c := range s.Commands {
			if c.Kind == script.KindSQL {
				calledNames(tg.called, c.Text)
			}
		}
	}
	return backend.Workload{Target: t, Mode: mode.String()}, nil
}

// Samplers connects the PostgreSQL samplers (one session tagged
// firedrill-sampler) and the host's; pg_stat_statements is created only on
// the embedded server.
func (tg *target) Samplers(ctx context.Context, timeout time.Duration) (*backend.Sampling, error) {
	set, err := pgsampler.New(ctx, tg.connString, pgsampler.Options{Timeout: timeout, CreateStatements: tg.inst != nil})
	if err != nil {
		return nil, fmt.Errorf("samplers: %w", err)
	}
	tg.set = set
	dataDir := ""
	if tg.inst != nil {
		dataDir = tg.inst.DataDir()
	}
	hosts := host.New(dataDir)
	notes := set.Notes()
	// The server's processes: its CPU apart from firedrill's.
	if tg.inst != nil {
		hosts = append(hosts, host.Server(tg.inst.PID))
	} else if postmaster, note := tg.givenPostmaster(ctx); postmaster > 0 {
		hosts = append(hosts, host.Server(func() int { return postmaster }))
	} else {
		if notes == nil {
			notes = map[string]string{}
		}
		notes[hostmetric.Server] = note
	}
	return &backend.Sampling{
		Sources:    sampler.Schedule(set.Samplers(), hosts),
		Notes:      notes,
		Close:      func() error { set.Close(); return nil },
		Unanswered: unanswered,
	}, nil
}

// givenPostmaster finds the postmaster of a given server on this host,
// for the server sampler: a session's backend (pg_backend_pid()) is its
// child. 0 and why not when the server is elsewhere or its process is
// not visible here (another PID namespace).
func (tg *target) givenPostmaster(ctx context.Context) (int, string) {
	cfg, err := pgconn.ParseConfig(tg.connString)
	if err != nil {
		return 0, "server CPU unknown: " + err.Error()
	}
	if !host.Local(cfg.Host) {
		return 0, host.RemoteNote
	}
	cfg.RuntimeParams["application_name"] = "firedrill-sampler"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, "server CPU unknown: " + err.Error()
	}
	defer conn.Close(context.Background())
	rows, err := conn.Exec(ctx, "SELECT pg_backend_pid() /* firedrill-sampler */").ReadAll()
	if err != nil || len(rows) != 1 || len(rows[0].Rows) != 1 {
		return 0, fmt.Sprintf("server CPU unknown: pg_backend_pid(): %v", err)
	}
	backendPID, err := strconv.Atoi(string(rows[0].Rows[0][0]))
	if err != nil {
		return 0, "server CPU unknown: pg_backend_pid(): " + err.Error()
	}
	postmaster, err := host.Parent(backendPID)
	if err == nil {
		err = errors.Join(host.Check(backendPID, "postgres", "postmaster"), host.Check(postmaster, "postgres", "postmaster"))
	}
	if err != nil {
		return 0, "server CPU unknown: " + err.Error()
	}
	return postmaster, ""
}

// Settings reads pg_settings through the samplers' session, and notes the
// server's version for Info.
func (tg *target) Settings(ctx context.Context) (map[string]string, error) {
	if tg.set == nil {
		return nil, fmt.Errorf("read pg_settings: the samplers are not connected")
	}
	settings, err := tg.set.Settings(ctx)
	if err != nil {
		return nil, err
	}
	tg.info.VersionNum = tg.set.VersionNum()
	if tg.info.ServerVersion == "" {
		tg.info.ServerVersion = settings["server_version"]
	}
	return settings, nil
}

// SettingsSource is the source of the snapshots taken after a settings
// event.
func (tg *target) SettingsSource() string { return pgmetric.Settings }

// EventEnv gives events the server: its connection, its data directory
// and a restart on the embedded server; on a given one, firedrill's schema.
func (tg *target) EventEnv(allowShell bool, appName func(string) string) *event.Env {
	// User-written SQL and commands (sql, hold_transaction, shell) get
	// the confined connection; settings and terminate events the admin's.
	env := &event.Env{ConnString: tg.userConnString, AllowShell: allowShell, AppName: appName}
	if tg.confined() {
		env.Backend = &pgevent.Target{Schema: tg.schema, Admin: tg.connString, Sessions: tg.sessionsRole(),
			OnRecord: func() { tg.recorded.Store(true) }}
	}
	if tg.inst != nil {
		inst := tg.inst
		env.DataDir = inst.DataDir()
		env.Restart = func(ctx context.Context) error { return inst.Restart(ctx, nil) }
	}
	return env
}

// Close stops and removes the embedded server; on a given server it puts
// back the settings the run changed and says whether anything outside the
// schema changed. A run that found the server frozen gets one short try.
func (tg *target) Close(frozen bool) error {
	if tg.inst != nil {
		if tg.spec.Keep.Leave(frozen) {
			return nil // kept running for the next run (--reuse-server)
		}
		if err := tg.inst.Stop(); err != nil {
			return fmt.Errorf("stopping the embedded server: %w", err)
		}
		return nil
	}
	wait := restoreWait
	if frozen {
		wait = frozenRestoreWait
	}
	var err error
	if tg.recorded.Load() {
		err = tg.restoreSettings("after the run", wait)
	}
	if !frozen {
		tg.checkOutsideAfter()
	}
	if tg.role != nil && frozen {
		// A server that does not answer cannot drop the role either:
		// trying would only spend the little time left before the deadline.
		tg.role.leave()
		err = errors.Join(err, fmt.Errorf("the run's role %s is left on the server, which did not answer at the end of the run; "+
			"the next run, or 'firedrill restore' with the same --dsn once it answers, drops it", tg.role.name))
		tg.role = nil
	}
	if tg.role != nil {
		if derr := tg.role.close(tg.connString, wait); derr != nil {
			err = errors.Join(err, fmt.Errorf("%w\nThe run's role is left on the server; the next run or 'firedrill restore' with the same --dsn drops it", derr))
		} else {
			tg.logf("after the run: dropped the run's role %s", tg.role.name)
		}
		tg.role = nil
	}
	return err
}

// unanswered says whether a sampler's error is the server not answering in
// time: an error the server sent (statement_timeout included) is an
// answer. The samplers' errors are sometimes wrapped down to their text (a
// failed connection repeated), hence the words.
func unanswered(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return false
	}
	// Cancelled too: the run ended while the query waited on the server.
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || pgconn.Timeout(err) ||
		strings.Contains(err.Error(), "timeout") || strings.Contains(err.Error(), "context canceled")
}
