package redisevent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/firedrill/firedrill/backend/redis/redisconn"
)

// RestoreKey is the hash, in the given server's database, that remembers
// every setting a settings event changed: field the setting's name, value
// a JSON record of what it was and what firedrill made it. It is written
// before each change, so that a run killed at any moment leaves enough for
// the next run (or 'firedrill restore') to put the server back.
const RestoreKey = KeyPrefix + "settings_restore"

// record is one setting's entry in RestoreKey.
type record struct {
	Original string  `json:"original"`
	Applied  *string `json:"applied"` // nil until the CONFIG SET went through
	Run      string  `json:"run"`     // which firedrill process changed it
}

// Restored is one setting put back (or left alone) by RestoreSettings.
type Restored struct {
	Name string
	// What happened: "set back to everysec", "already as before the run",
	// "left alone: changed to always since by someone else".
	Outcome string
}

func (r Restored) String() string { return r.Name + ": " + r.Outcome }

// configGet is one setting's value as the server reports it.
func configGet(ctx context.Context, c *redisconn.Conn, name string) (string, error) {
	r, err := c.Do(ctx, "CONFIG", "GET", name)
	if err != nil {
		return "", fmt.Errorf("CONFIG GET %s: %w", name, err)
	}
	pairs := r.Strings()
	if len(pairs) < 2 {
		return "", fmt.Errorf("CONFIG GET %s: the server knows no such setting", name)
	}
	return pairs[1], nil
}

// recordOriginal notes a setting's value before a settings event changes
// it, unless an earlier change (of this run, or of a killed run not yet
// restored) noted it already: the first original is the one to go back to.
func recordOriginal(ctx context.Context, c *redisconn.Conn, name string) error {
	original, err := configGet(ctx, c, name)
	if err != nil {
		return fmt.Errorf("read %s to restore it after the run: %w", name, err)
	}
	host, _ := os.Hostname()
	rec, _ := json.Marshal(record{Original: original,
		Run: fmt.Sprintf("pid %d on %s at %s", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))})
	if _, err := c.Do(ctx, "HSETNX", RestoreKey, name, string(rec)); err != nil {
		return fmt.Errorf("remember %s's value in %s to restore it: %w"+
			"\nfiredrill changes settings only where it can put them back", name, RestoreKey, err)
	}
	return nil
}

// recordApplied notes the value firedrill gave the setting, so that a
// restore can tell it from someone else's later one.
func recordApplied(ctx context.Context, c *redisconn.Conn, name, applied string) error {
	rec, err := readRecord(ctx, c, name)
	if err != nil {
		return err
	}
	rec.Applied = &applied
	data, _ := json.Marshal(rec)
	if _, err := c.Do(ctx, "HSET", RestoreKey, name, string(data)); err != nil {
		return fmt.Errorf("remember %s's new value in %s: %w", name, RestoreKey, err)
	}
	return nil
}

// readRecord reads one setting's record.
func readRecord(ctx context.Context, c *redisconn.Conn, name string) (record, error) {
	r, err := c.Do(ctx, "HGET", RestoreKey, name)
	if err != nil {
		return record{}, fmt.Errorf("read %s's record in %s: %w", name, RestoreKey, err)
	}
	var rec record
	if err := json.Unmarshal([]byte(r.Text()), &rec); err != nil {
		return record{}, fmt.Errorf("%s's record in %s is not firedrill's (%q): %w", name, RestoreKey, r.Text(), err)
	}
	return rec, nil
}

// RestoreSettings puts back every setting that settings events changed
// on the server cfg reaches and recorded in RestoreKey. A setting changed
// since by someone else is left alone and said so. It is safe to call when
// nothing was changed, and after a run was killed.
func RestoreSettings(ctx context.Context, cfg redisconn.Config) ([]Restored, error) {
	cfg.Name = sessionPrefix + "restore"
	c, err := redisconn.Dial(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("restore settings: %w", err)
	}
	defer c.Close()
	r, err := c.Do(ctx, "HKEYS", RestoreKey)
	if err != nil {
		return nil, fmt.Errorf("restore settings: read %s: %w", RestoreKey, err)
	}
	names := r.Strings()
	slices.Sort(names)
	var done []Restored
	for _, name := range names {
		rec, err := readRecord(ctx, c, name)
		if err != nil {
			return done, fmt.Errorf("restore settings: %w", err)
		}
		current, err := configGet(ctx, c, name)
		if err != nil {
			return done, fmt.Errorf("restore settings: %w", err)
		}
		res := Restored{Name: name}
		switch {
		case current == rec.Original:
			// Also after a restart of the server, which forgets CONFIG SET.
			res.Outcome = "already as before the run"
		case rec.Applied == nil || current != *rec.Applied:
			res.Outcome = fmt.Sprintf("left alone: changed to %q since by someone else (it was %q before the run)", current, rec.Original)
		default:
			if _, err := c.Do(ctx, "CONFIG", "SET", name, rec.Original); err != nil {
				return done, fmt.Errorf("restore settings: set %s back to %q: %w", name, rec.Original, err)
			}
			res.Outcome = fmt.Sprintf("set back to %q", rec.Original)
		}
		if _, err := c.Do(ctx, "HDEL", RestoreKey, name); err != nil {
			return done, fmt.Errorf("restore settings: forget %s: %w", name, err)
		}
		done = append(done, res)
	}
	return done, nil
}
