package redis

import (
	"errors"
	"fmt"
	"strings"

	"github.com/firedrill/firedrill/backend"
	redistarget "github.com/firedrill/firedrill/db/redis/client"
	"github.com/firedrill/firedrill/db/redis/redisevent"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

// Workload makes the engine's target for one workload's clients (RESP2 on
// the engine's event loop; over TLS, a goroutine per client), each connection named appName (CLIENT
// SETNAME), as the confined ACL user on a given server. There, scripts
// that reach past the keys they name (FLUSHDB, CONFIG SET, SELECT, a Lua
// body's redis.call('FLUSHALL') …) are refused early, each at its
// file:line:col, unless --allow-outside-schema: the ACL user would be
// refused them anyway, command by command, mid-run.
func (tg *target) Workload(spec *scenario.Workload, scripts []*script.Script, appName string) (backend.Workload, error) {
	if tg.given() && !tg.spec.AllowOutsideSchema && !tg.spec.PrivilegesOnly {
		if err := checkScripts(scripts); err != nil {
			return backend.Workload{}, fmt.Errorf("workload %s: %w", spec.Name, err)
		}
	}
	cfg := redistarget.Config{
		Network: tg.work.Network, Addr: tg.work.Addr, User: tg.work.User, Password: tg.work.Password,
		DB: tg.work.DB, AppName: appName,
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

// checkScripts refuses what the scripts' commands would reach past
// firedrill's keys (redisevent.Reaches), every one.
func checkScripts(scripts []*script.Script) error {
	var errs []error
	for _, s := range scripts {
		for _, cmd := range s.Commands {
			if cmd.Kind != script.KindRedis || cmd.Redis == nil {
				continue
			}
			for _, what := range redisevent.Reaches(words(cmd.Redis)) {
				errs = append(errs, fmt.Errorf("%s: %s reaches past firedrill's keys on a given server "+
					"(pass --allow-outside-schema if that is what you want)", cmd.Pos, what))
			}
		}
	}
	return errors.Join(errs...)
}

// words is a script's command as the lexical check reads it: a word a
// variable gives is known up to the variable.
func words(c *script.RedisCommand) []redisevent.Word {
	out := make([]redisevent.Word, len(c.Args))
	for i, a := range c.Args {
		if a.Parts == nil {
			out[i] = redisevent.Word{Text: a.Literal}
			continue
		}
		var prefix strings.Builder
		for _, p := range a.Parts {
			if p.Var != script.NoVar {
				break
			}
			prefix.WriteString(p.Text)
		}
		out[i] = redisevent.Word{Text: prefix.String(), Var: true}
	}
	return out
}
