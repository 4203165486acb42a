package redisevent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/db/redis/redisconn"
)

// RestoreKey is the hash, in the given server's database, that remembers
// every setting a settings event changed: field the setting's name, value
// a JSON record of what it was and what firedrill made it. It is written
// before each change, so that a run killed at any moment leaves enough for
// the next run (or 'firedrill restore') to put the server back. It is
// outside KeyPrefix: the confined ACL user that runs workloads and
// command events (~firedrill:*) can neither read nor forge it, so a
// restore sets only values the server had.
const RestoreKey = "firedrill-admin:settings_restore"

// legacyRestoreKey is where firedrill kept that record before it confined
// given servers by ACL: under KeyPrefix, where any workload could write.
const legacyRestoreKey = KeyPrefix + "settings_restore"

// NoteLegacyRecord says, through logf, what a record left by an older
// firedrill under legacyRestoreKey holds, without acting on it: a
// workload may have written it, so firedrill does not trust it; the
// person who reads the note can set those settings back by hand.
func NoteLegacyRecord(ctx context.Context, c *redisconn.Conn, logf func(string, ...any)) {
	r, err := c.Do(ctx, "HGETALL", legacyRestoreKey)
	if err != nil || len(r.Elems) == 0 {
		return
	}
	pairs := r.Strings()
	var items []string
	for i := 0; i+1 < len(pairs); i += 2 {
		var rec record
		if json.Unmarshal([]byte(pairs[i+1]), &rec) == nil {
			items = append(items, fmt.Sprintf("%s was %q", pairs[i], rec.Original))
		} else {
			items = append(items, fmt.Sprintf("%s: %q", pairs[i], pairs[i+1]))
		}
	}
	logf("note: %s (database %d) is a record an older firedrill left of settings it changed: %s. "+
		"firedrill no longer trusts that key (any client that may write %s* could have written it): "+
		"if those settings still differ, set them back with CONFIG SET, then DEL %s",
		legacyRestoreKey, c.Config().DB, strings.Join(items, ", "), KeyPrefix, legacyRestoreKey)
}

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

// recordOriginal notes a setting's value, original, before a settings
// event changes it, unless an earlier change (of this run, or of a killed
// run not yet restored) noted it already: the first original is the one
// to go back to. It says whether this call made the record.
func recordOriginal(ctx context.Context, c *redisconn.Conn, name, original string) (bool, error) {
	host, _ := os.Hostname()
	rec, _ := json.Marshal(record{Original: original,
		Run: fmt.Sprintf("pid %d on %s at %s", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))})
	r, err := c.Do(ctx, "HSETNX", RestoreKey, name, string(rec))
	if err != nil {
		return false, fmt.Errorf("remember %s's value in %s to restore it: %w"+
			"\nfiredrill changes settings only where it can put them back", name, RestoreKey, err)
	}
	return r.Int == 1, nil
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
