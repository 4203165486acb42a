package redisevent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// settingsKind is Redis's settings event: CONFIG SET each, which takes
// effect at once and lasts until the server restarts (firedrill never
// runs CONFIG REWRITE). CONFIG SET gets the names as arguments, never
// spliced into text: the server judges them.
var settingsKind = event.SettingsKind(event.SettingsOptions{Example: `settings: {appendfsync: "no"}`}, applySettings)

// applySettings sets each setting in name order and reads back what the
// server made of it (CONFIG GET gives its own spelling: maxmemory 1gb is
// 1073741824). On a given server each setting's value is recorded before
// it changes, so that RestoreSettings puts it back at the end of the run
// or after a kill; on the embedded server the changes go with the
// server. A change that would make the given server evict keys that are
// not firedrill's is refused before any (Evicts). An event that fails
// midway sets back what it had set, so it changed nothing, and on a given
// server tells Target.SettingsFailed: the run ends failed.
func applySettings(ctx context.Context, env *event.Env, run *event.SettingsRun) (string, map[string]any, error) {
	t, err := targetOf(env)
	if err != nil {
		return "", nil, errorf("settings", run.Name, err)
	}
	c, err := connect(ctx, env, run.Name)
	if err != nil {
		return "", nil, settingsFailed(ctx, t, run.Name, err)
	}
	defer c.Close()
	detail := run.Detail
	run.Begin()
	if t.Given && !t.AllowOutside {
		if err := Evicts(ctx, c, run.Settings); err != nil {
			return "", detail, settingsFailed(ctx, t, run.Name, err)
		}
	}
	effective := map[string]string{}
	var done []change
	for _, name := range run.Names {
		if t.Given && t.OnRecord != nil {
			t.OnRecord()
		}
		ch, err := setOne(ctx, c, t.Given, name, run.Settings[name])
		if err != nil {
			if undoErr := undo(ctx, c, t.Given, done); undoErr != nil {
				err = errors.Join(err, undoErr)
			} else if len(done) > 0 {
				err = fmt.Errorf("%w; what the event had set before is set back", err)
			}
			return "", detail, settingsFailed(ctx, t, run.Name, err)
		}
		done = append(done, ch)
		effective[name] = ch.after
	}
	detail["effective"] = effective
	return event.SettingsOutcome(run.Names, effective, ""), detail, nil
}

// settingsFailed is a settings event's error; on a given server,
// Target.SettingsFailed hears of it (unless the run was stopped) so that
// the run ends failed.
func settingsFailed(ctx context.Context, t *Target, eventName string, err error) error {
	err = errorf("settings", eventName, err)
	if ctx.Err() == nil && t.Given && t.SettingsFailed != nil {
		t.SettingsFailed(err)
	}
	return event.Cancelled(ctx, err)
}

// change is one setting a settings event set: its value before and
// after, and whether the event made its restore record.
type change struct {
	name, before, after string
	recorded            bool
}

// setOne records (on a given server) and sets one setting; a CONFIG SET
// the server refuses leaves no record behind.
func setOne(ctx context.Context, c *redisconn.Conn, given bool, name, value string) (change, error) {
	ch := change{name: name}
	before, err := configGet(ctx, c, name)
	if err != nil {
		return ch, fmt.Errorf("read %s to restore it after the run: %w", name, err)
	}
	ch.before = before
	if given {
		if ch.recorded, err = recordOriginal(ctx, c, name, before); err != nil {
			return ch, err
		}
	}
	if _, err := c.Do(ctx, "CONFIG", "SET", name, value); err != nil {
		err = fmt.Errorf("CONFIG SET %s %s: %w", name, value, err)
		if ch.recorded {
			if _, herr := c.Do(ctx, "HDEL", RestoreKey, name); herr != nil {
				err = errors.Join(err, fmt.Errorf("forget %s's record: %w", name, herr))
			}
		}
		return ch, err
	}
	if ch.after, err = configGet(ctx, c, name); err != nil {
		return ch, err
	}
	if given {
		if err := recordApplied(ctx, c, name, ch.after); err != nil {
			return ch, err
		}
	}
	return ch, nil
}

// undo sets back what a failed event had set, last first, with the
// records as they were before the event.
func undo(ctx context.Context, c *redisconn.Conn, given bool, done []change) error {
	var errs []error
	for _, ch := range slices.Backward(done) {
		if _, err := c.Do(ctx, "CONFIG", "SET", ch.name, ch.before); err != nil {
			errs = append(errs, fmt.Errorf("set %s back to %q: %w (the end of the run restores it)", ch.name, ch.before, err))
			continue
		}
		switch {
		case !given:
		case ch.recorded:
			if _, err := c.Do(ctx, "HDEL", RestoreKey, ch.name); err != nil {
				errs = append(errs, fmt.Errorf("forget %s's record: %w", ch.name, err))
			}
		default: // an earlier event's record: its value is back
			if err := recordApplied(ctx, c, ch.name, ch.before); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// SettingsOf is what a settings event sets; false for another kind.
func SettingsOf(spec scenario.Event) (map[string]string, bool) {
	c, ok := spec.Config.(event.SettingsConfig)
	return c.Settings, ok
}

// Evicts refuses settings that would make a given server evict keys that
// are not firedrill's: with an evicting maxmemory-policy (any but
// noeviction, as set or as the server has it) a maxmemory (as set or as
// the server has it) that used_memory already reaches 90% of: Redis
// would evict the application's keys (and firedrill's record of what to
// restore) at once, or as soon as the load writes a little.
func Evicts(ctx context.Context, c *redisconn.Conn, settings map[string]string) error {
	newLimit, setsLimit := settings["maxmemory"]
	newPolicy, setsPolicy := settings["maxmemory-policy"]
	if !setsLimit && !setsPolicy {
		return nil
	}
	policy, err := configGet(ctx, c, "maxmemory-policy")
	if err != nil {
		return err
	}
	if setsPolicy {
		policy = strings.ToLower(newPolicy)
	}
	limitText, err := configGet(ctx, c, "maxmemory")
	if err != nil {
		return err
	}
	if setsLimit {
		limitText = newLimit
	}
	limit, ok := memoryBytes(limitText)
	if !ok {
		return fmt.Errorf("maxmemory %q: not a size firedrill can read (bytes, or 100mb, 1gb …), so it cannot tell whether the server would evict its keys", limitText)
	}
	if policy == "noeviction" || limit == 0 {
		return nil
	}
	r, err := c.Do(ctx, "INFO", "memory")
	if err != nil {
		return fmt.Errorf("INFO memory: %w", err)
	}
	used, err := strconv.ParseUint(infoValue(r.Text(), "used_memory"), 10, 64)
	if err != nil {
		return fmt.Errorf("INFO memory: no used_memory: %w", err)
	}
	if used*10 < limit*9 {
		return nil
	}
	return fmt.Errorf("refused on a given server: with maxmemory %d bytes and maxmemory-policy %s, Redis would evict keys that are not firedrill's "+
		"(used_memory is already %d bytes, 90%% or more of the limit); choose a limit well above %d bytes or the policy noeviction, "+
		"or pass --allow-outside-schema to let it evict", limit, policy, used, used)
}

// memoryBytes reads a memory size as CONFIG SET takes it: bytes, or a
// number with k/kb, m/mb, g/gb (k = 1000, kb = 1024 …).
func memoryBytes(text string) (uint64, bool) {
	text = strings.ToLower(strings.TrimSpace(text))
	units := []struct {
		suffix string
		factor uint64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}}
	factor := uint64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(text, u.suffix); ok {
			text, factor = n, u.factor
			break
		}
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, false
	}
	return n * factor, true
}

// infoValue finds one field's value in INFO's "name:value" lines.
func infoValue(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if value, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), name+":"); ok {
			return value
		}
	}
	return ""
}
