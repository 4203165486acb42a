package redis_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/backend/backendtest"
	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisconn"
)

// A whole run against a user's server — setup, a workload, a settings, a
// command and a terminate event — leaves the user's keys and settings as
// they were, also when the run is cancelled (Ctrl-C) in the middle.
func TestARunOnAUsersServerLeavesItsKeysAndSettings(t *testing.T) {
	inst, err := redisinstance.Start(t.Context(), redisinstance.Options{Password: "pw-of-the-user"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	c, err := redisconn.Dial(t.Context(), redisconn.Config{Network: "tcp", Addr: inst.Addr(), Password: "pw-of-the-user"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cmd := range [][]string{
		{"SET", "user:1", "ann"}, {"HSET", "session:9", "id", "9"}, {"RPUSH", "queue", "a", "b"},
		{"SET", "stock:7", "100"}, {"CONFIG", "SET", "appendfsync", "always"},
	} {
		if _, err := c.Do(t.Context(), cmd...); err != nil {
			t.Fatal(err)
		}
	}
	before := usersState(t, c)
	src := `name: users-server
duration: 3s
setup: {keys: {count: 100}}
workloads:
  - name: app
    clients: 4
    scripts:
      - inline: |
          \set k random(1, 100)
          INCR firedrill:hits::k
          GET firedrill:key::k
          GET firedrill:hits::k
events:
  - {kind: settings, at: 500ms, settings: {appendfsync: "no", maxmemory-policy: allkeys-lru}}
  - {kind: command, at: 1s, command: ["SET firedrill:marker 1", "GET firedrill:marker"]}
  - {kind: terminate, at: 1500ms, workload: app}
`
	dsn := fmt.Sprintf("redis://:pw-of-the-user@%s/0", inst.Addr())
	for _, cancelAt := range []time.Duration{0, 1200 * time.Millisecond} {
		t.Run(fmt.Sprintf("cancelled at %v", cancelAt), func(t *testing.T) {
			res, log := backendtest.RunOnGivenServer(t, src, dsn, cancelAt)
			if cancelAt == 0 && res.Manifest.Target.Kind != "redis" || res.Manifest.Target.Embedded || strings.Contains(res.Manifest.Target.Address, "pw-of") {
				t.Errorf("target %+v", res.Manifest.Target)
			}
			if after := usersState(t, c); after != before {
				t.Errorf("the user's server changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if strings.Contains(log, "pw-of-the-user") {
				t.Errorf("the log shows the password")
			}
		})
	}
}

// usersState is every key not under firedrill: with its value (DUMP),
// and the settings the run changes.
func usersState(t *testing.T, c *redisconn.Conn) string {
	t.Helper()
	keys, err := c.Do(t.Context(), "KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, key := range keys.Strings() {
		if strings.HasPrefix(key, "firedrill:") {
			continue
		}
		dump, err := c.Do(t.Context(), "DUMP", key)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %q", key, dump.Text()))
	}
	for _, name := range []string{"appendfsync", "maxmemory-policy"} {
		r, err := c.Do(t.Context(), "CONFIG", "GET", name)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Join(r.Strings(), " = "))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
