// Package redis is firedrill's Redis backend: a throwaway redis-server
// (db/redis/instance) or a given one (--dsn redis://host:port/db), the
// engine's targets (db/redis/client), setup (keys to preload), the
// configuration snapshot, the events' environment and kinds
// (db/redis/redisevent), and putting back on a given server what
// settings events changed.
//
// # On a given server
//
// Redis has no schemas, so firedrill confines by the server's own ACLs
// (acl.go): the URL is the admin connection, used only for firedrill's
// fixed commands (samplers, settings and terminate events, the restore
// record, making and removing the run's ACL user); setup's keys,
// workloads' scripts and command events run as an ACL user the run makes
// that reaches only the keys firedrill:* of the URL's database and no
// admin or dangerous command, which Redis applies inside Lua too. CONFIG
// SET by settings events is recorded first (in the hash
// firedrill-admin:settings_restore, out of that user's reach) and put
// back at the end of the run, after Ctrl-C, and by the next run or
// `firedrill restore` after a kill. What a command's words show would
// reach past firedrill's keys (FLUSHDB, CONFIG SET, a Lua body's
// redis.call('FLUSHALL'), COPY … DB n, a key not under firedrill:) is
// refused early, unless --allow-outside-schema, which runs everything as
// the URL's user.
package redis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/firedrill/firedrill/backend"
	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/db/redis/redisevent"
	"github.com/firedrill/firedrill/db/redis/rules"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	"github.com/firedrill/firedrill/timeline"
)

// Kind is the backend's name in scenarios and run.json.
const Kind = "redis"

// product is the server's name for people (reports).
const product = "Redis"

// errorCodes is what Redis calls the first word of its error replies.
const errorCodes = "error prefix"

// KeyPrefix is where firedrill keeps the keys it creates on a given server.
const KeyPrefix = "firedrill:"

// Backend is Redis's backend.Backend.
type Backend struct{}

var (
	_ backend.Backend     = Backend{}
	_ backend.Ruled       = Backend{}
	_ backend.Schemed     = Backend{}
	_ backend.Keyed       = Backend{}
	_ backend.Dialected   = Backend{}
	_ backend.Passworder  = Backend{}
	_ backend.Preflighter = Backend{}
)

// New returns the Redis backend.
func New() Backend { return Backend{} }

// Kind is "redis".
func (Backend) Kind() string { return Kind }

// Rules are the diagnosis rules of redis runs (db/redis/rules).
func (Backend) Rules() []diagnose.Rule { return redisrules.Rules() }

// Schemes are Redis's URL schemes: redis, and rediss for TLS.
func (Backend) Schemes() []string { return []string{"redis", "rediss"} }

// Keys are the kind-specific scenario keys Redis takes.
func (Backend) Keys() []string { return []string{"target.settings", "setup.keys"} }

// Dialect is Redis's: one command per line between the meta-commands.
func (Backend) Dialect() script.Dialect { return redisdialect.Script() }

// Password is the password of a redis:// URL, wherever in it (userinfo,
// a lone userinfo, ?password=), so that it is masked too.
func (Backend) Password(dsn string) string {
	cfg, err := redisconn.ParseURL(dsn)
	if err != nil {
		return ""
	}
	return cfg.Password
}

// Preflight refuses, before anything runs, a URL firedrill cannot use
// (a bad database number, a rediss:// certificate file it cannot read) and, on a given server, events that
// reach past firedrill's keys (a command event's FLUSHDB or CONFIG SET, a
// terminate by type) unless --allow-outside-schema; workloads' scripts are
// checked when their targets are made (Workload).
func (Backend) Preflight(spec backend.Spec) error {
	dsn := backend.GivenDSN(spec)
	if dsn == "" {
		return nil
	}
	cfg, err := redisconn.ParseURL(dsn)
	if err != nil {
		return fmt.Errorf("--dsn: %w", err)
	}
	if cfg.TLS != nil {
		if _, err := cfg.TLS.Config(cfg.Addr); err != nil {
			return fmt.Errorf("--dsn: %w", err)
		}
	}
	if spec.AllowOutsideSchema {
		return nil
	}
	sc := spec.Scenario
	var problems []string
	for _, ev := range sc.Events {
		for _, what := range redisevent.Outside(ev, !spec.PrivilegesOnly) {
			problems = append(problems, fmt.Sprintf("%s:%d:%d: event %s: %s", sc.File, ev.Pos.Line, ev.Pos.Col, event.Name(ev), what))
		}
	}
	var eventsErr error
	if len(problems) > 0 {
		eventsErr = fmt.Errorf("on a given server these events would reach past firedrill's keys (pass --allow-outside-schema to run them):\n  %s",
			strings.Join(problems, "\n  "))
	}
	if spec.PrivilegesOnly {
		return eventsErr
	}
	return errors.Join(eventsErr, preflightScripts(sc))
}

// preflightScripts refuses, before anything runs (validate too), what the
// workloads' scripts would reach past firedrill's keys: the same check
// Workload makes, so that validate says it without a server. A script
// that does not parse is left to the scenario's own errors.
func preflightScripts(sc *scenario.Scenario) error {
	var errs []error
	for _, w := range sc.Workloads {
		var scripts []*script.Script
		for _, src := range w.Scripts {
			name, text := fmt.Sprintf("%s:%d:%d", sc.File, src.Pos.Line, src.Pos.Col), []byte(src.Inline)
			if src.File != "" {
				name = sc.Resolve(src.File)
				b, err := os.ReadFile(name)
				if err != nil {
					continue
				}
				text = b
			}
			if s, err := script.ParseDialect(name, text, script.NewSymbols(), redisdialect.Script()); err == nil {
				scripts = append(scripts, s)
			}
		}
		if err := checkScripts(scripts); err != nil {
			errs = append(errs, fmt.Errorf("workload %s: %w", w.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Open starts the embedded server with the scenario's settings, or takes
// the given one, where settings a killed run left changed are put back
// first.
func (Backend) Open(ctx context.Context, spec backend.Spec) (backend.Target, error) {
	sc := spec.Scenario
	tg := &target{spec: spec, sc: sc, logf: backend.Logf(spec.Log)}
	if dsn := backend.GivenDSN(spec); dsn != "" {
		cfg, err := redisconn.ParseURL(dsn)
		if err != nil {
			return nil, fmt.Errorf("--dsn: %w", err)
		}
		tg.conn = cfg
		tg.info = timeline.Target{Kind: Kind, Product: product, Address: cfg.Where(), Database: strconv.Itoa(cfg.DB), ErrorCodes: errorCodes}
		if err := tg.restoreSettings(ctx, "before the run", restoreWait); err != nil {
			return nil, err
		}
		tg.work = cfg
		if err := tg.openConfined(ctx); err != nil {
			return nil, err
		}
		if err := tg.refuseEvictions(ctx); err != nil {
			tg.dropRunUser(aclWait)
			return nil, err
		}
		return tg, nil
	}
	settings := map[string]string{}
	// Redis admits 10000 clients by default; a run of more (plus
	// firedrill's own sessions) gets room for them.
	if spec.Connections+64 > 10000 {
		settings["maxclients"] = strconv.Itoa(spec.Connections + 64)
	}
	for k, v := range sc.Target.Settings {
		settings[k] = v
	}
	inst, err := backend.KeptServer(spec.Keep,
		func() (*redisinstance.Instance, error) {
			return redisinstance.Start(ctx, redisinstance.Options{Settings: settings, Progress: spec.Log,
				SlowDisk: event.WantsSlowDisk(sc.Events)})
		},
		func(inst *redisinstance.Instance) error { return readyKept(ctx, inst, settings, tg.logf) },
		(*redisinstance.Instance).Stop)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded Redis: %w", err)
	}
	tg.inst = inst
	tg.conn = redisconn.Config{Network: "unix", Addr: inst.Socket(), Password: inst.Password()}
	tg.work = tg.conn
	tg.info = timeline.Target{Kind: Kind, Product: product, Embedded: true, Address: inst.Addr(), Database: "0",
		ServerVersion: inst.Version(), DataDir: inst.DataDir(), ErrorCodes: errorCodes}
	return tg, nil
}

// readyKept readies the server the run before kept (--reuse-server) for
// this run: up, and restarted when this run wants settings it lacks (more
// clients than it admits).
func readyKept(ctx context.Context, inst *redisinstance.Instance, settings map[string]string, logf func(string, ...any)) error {
	if inst.PID() == 0 {
		return errors.New("the kept server is down")
	}
	if change := backend.RestartSettings(inst.Settings(), settings, "maxclients"); len(change) > 0 {
		logf("restarting the kept Redis for this run's settings")
		return inst.Restart(ctx, change)
	}
	logf("reusing the Redis the run before kept (pid %d), its setup done", inst.PID())
	return nil
}

// target is one run's Redis.
type target struct {
	spec backend.Spec
	sc   *scenario.Scenario
	logf func(string, ...any)
	conn redisconn.Config        // how firedrill's own sessions reach the server (the admin URL)
	inst *redisinstance.Instance // the embedded server; nil for a given one
	info timeline.Target
	// work is how setup, workloads and command events reach it: on a
	// given server the confined ACL user (acl.go), else conn.
	work redisconn.Config
	// runUser is the ACL user this run made ("" with --run-as,
	// --allow-outside-schema or the embedded server), and hold the admin
	// connection that marks it live until Close.
	runUser string
	hold    *redisconn.Conn
	// settingsFailed holds the settings events that failed on a given
	// server: they changed nothing, and the run ends failed.
	settingsFailed failures
	// recorded is set once a settings event of this run records a
	// setting to restore: the end of a run that changed none has nothing
	// to restore (a killed run's leftovers are restored at Open).
	recorded atomic.Bool
}

var (
	_ backend.Target     = (*target)(nil)
	_ backend.Configured = (*target)(nil)
	_ backend.Eventful   = (*target)(nil)
)

func (tg *target) Info() timeline.Target { return tg.info }

// given says whether the target is the user's server.
func (tg *target) given() bool { return tg.inst == nil }

// dial opens a session of firedrill's own, named for the samplers and CLIENT LIST.
func (tg *target) dial(ctx context.Context, name string) (*redisconn.Conn, error) {
	cfg := tg.conn
	cfg.Name = name
	return redisconn.Dial(ctx, cfg)
}

// dialWork opens a session as setup and the workloads are: on a given
// server the confined user's (tg.work).
func (tg *target) dialWork(ctx context.Context, name string) (*redisconn.Conn, error) {
	cfg := tg.work
	cfg.Name = name
	return redisconn.Dial(ctx, cfg)
}

// Close stops and removes the embedded server; on a given server it puts
// back the settings the run changed. A run that found the server frozen
// gets one short try.
func (tg *target) Close(frozen bool) error {
	if tg.inst != nil {
		if tg.spec.Keep.Leave(frozen) {
			return nil // kept running for the next run (--reuse-server)
		}
		if err := tg.inst.Stop(); err != nil {
			return fmt.Errorf("stopping the embedded Redis: %w", err)
		}
		return nil
	}
	wait := restoreWait
	if frozen {
		wait = frozenRestoreWait
	}
	// Only what this run recorded is put back: a run that changed no
	// setting has nothing to restore (a killed run's leftovers were
	// restored at Open), but its ACL user goes either way.
	var err error
	if tg.recorded.Load() {
		err = tg.restoreSettings(context.Background(), "after the run", wait)
	}
	if frozen {
		tg.leaveRunUser()
	} else {
		tg.dropRunUser(wait)
	}
	return errors.Join(err, tg.settingsFailed.err())
}
