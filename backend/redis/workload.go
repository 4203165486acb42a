package redis

import (
	"errors"
	"fmt"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/backend/redis/redisevent"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	redistarget "github.com/firedrill/firedrill/target/redis"
)

// Workload makes the engine's target for one workload's clients (RESP2 on
// the engine's event loop; over TLS, a goroutine per client), each connection named appName (CLIENT
// SETNAME). On a given server, scripts that reach past the keys they name
// (FLUSHDB, CONFIG SET, SELECT …) are refused, each at its file:line:col,
// unless --allow-outside-schema.
func (tg *target) Workload(spec *scenario.Workload, scripts []*script.Script, appName string) (backend.Workload, error) {
	if tg.given() && !tg.spec.AllowOutsideSchema {
		if err := checkScripts(scripts); err != nil {
			return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, err)
		}
	}
	cfg := redistarget.Config{
		Network: tg.conn.Network, Addr: tg.conn.Addr, User: tg.conn.User, Password: tg.conn.Password,
		DB: tg.conn.DB, AppName: appName,
	}
	if tg.conn.TLS != nil {
		conf, err := tg.conn.TLS.Config(tg.conn.Addr)
		if err != nil {
			return backend.Workload{}, fmt.Errorf("workload %s: --dsn: %w", spec.Name, err)
		}
		cfg.TLS = conf
	}
	t, err := redistarget.NewTarget(cfg)
	if err != nil {
		return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, err)
	}
	return backend.Workload{Target: t, Mode: "resp2"}, nil
}

// checkScripts refuses the scripts' server-wide commands, every one.
func checkScripts(scripts []*script.Script) error {
	var errs []error
	for _, s := range scripts {
		for _, cmd := range s.Commands {
			if cmd.Kind != script.KindRedis || cmd.Redis == nil {
				continue
			}
			if what, wide := serverWideCommand(cmd.Redis); wide {
				errs = append(errs, fmt.Errorf("%s: %s reaches past firedrill's keys on a given server "+
					"(pass --allow-outside-schema if that is what you want)", cmd.Pos, what))
			}
		}
	}
	return errors.Join(errs...)
}

// serverWideCommand says whether a script's command is server-wide
// (redisevent.ServerWide), from its literal name and first argument.
func serverWideCommand(c *script.RedisCommand) (string, bool) {
	literal := func(i int) string {
		if i < len(c.Args) && c.Args[i].Parts == nil {
			return c.Args[i].Literal
		}
		return ""
	}
	return redisevent.ServerWide(literal(0), literal(1))
}
