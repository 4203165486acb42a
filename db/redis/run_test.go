package redis_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/backend/backendtest"
	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
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

// Setup's preloading happens before the samplers' first reading, their
// baseline: with every command in the slow log (slowlog-log-slower-than
// 0), the run's slow log, command counts and findings show the load's
// commands and none of setup's, though the load reads what setup made.
func TestSetupIsNotInTheSlowLogNorTheFindings(t *testing.T) {
	inst, err := redisinstance.Start(t.Context(), redisinstance.Options{Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	c, err := redisconn.Dial(t.Context(), redisconn.Config{Network: "tcp", Addr: inst.Addr(), Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cmd := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", "0"}, {"CONFIG", "SET", "slowlog-max-len", "100000"}} {
		if _, err := c.Do(t.Context(), cmd...); err != nil {
			t.Fatal(err)
		}
	}
	src := `name: setup-quiet
duration: 3s
setup:
  keys:
    count: 100
    lists: {count: 2, length: 5000}
    hashes: {count: 2, fields: 2000}
    sets: {count: 2, members: 2000}
    zsets: {count: 2, members: 2000}
    streams: {count: 1, entries: 2000}
workloads:
  - name: reader
    clients: 2
    scripts:
      - inline: |
          LLEN firedrill:list:1
          HLEN firedrill:hash:2
          SCARD firedrill:set:1
          ZCARD firedrill:zset:2
          XLEN firedrill:stream:1
`
	res, _ := backendtest.RunOnGivenServer(t, src, fmt.Sprintf("redis://:pw@%s/0", inst.Addr()), 0)
	if res.Summary.Workloads[0].Count == 0 || res.Summary.Workloads[0].Failed != 0 {
		t.Fatalf("the load: %+v", res.Summary.Workloads[0])
	}
	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	setupCommands := []string{"set", "rpush", "hset", "sadd", "zadd", "xadd", "unlink"}
	loadSeen := false
	for _, s := range run.SourceSamples(rm.Slowlog) {
		var entries []rm.SlowlogEntry
		if len(s.Detail) > 0 {
			if err := json.Unmarshal(s.Detail, &entries); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range entries {
			if len(e.Args) == 0 {
				continue
			}
			cmd := strings.ToLower(e.Args[0])
			loadSeen = loadSeen || cmd == "llen"
			if slices.Contains(setupCommands, cmd) || e.ClientName == "firedrill-setup" {
				t.Errorf("the slow log shows setup's %v (client %s)", e.Args, e.ClientName)
			}
		}
	}
	if !loadSeen {
		t.Error("the slow log shows none of the load's LLEN: nothing was sampled, so the test proves nothing")
	}
	for _, cmd := range setupCommands {
		for _, p := range run.Series(rm.CommandStats, rm.CmdCalls(cmd)) {
			if p.V > 0 {
				t.Errorf("commandstats shows %s at %.1f s: %v/s", cmd, p.T, p.V)
			}
		}
	}
	// What a finding says it saw (its headline and evidence; a remedy may
	// well advise UNLINK).
	for _, f := range diagnose.Diagnose(run, kinds.Registry().Rules("redis")) {
		seen := []string{f.Headline}
		for _, e := range f.Evidence {
			seen = append(seen, e.Series, e.Text)
		}
		text := strings.Join(seen, "\n")
		for _, cmd := range setupCommands[1:] {
			if strings.Contains(text, strings.ToUpper(cmd)) || strings.Contains(text, ":"+cmd) || strings.Contains(text, "firedrill-setup") {
				t.Errorf("finding %s shows setup's %s:\n%s", f.Rule, cmd, text)
			}
		}
	}
}
