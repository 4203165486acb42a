package scenario_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/postgres/pgdialect"
	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
)

// twoTargets is a scenario of two systems; the targets come after the
// workloads and events that name them, which the loader must not mind.
const twoTargets = `name: two
duration: 20s
workloads:
  - name: orders
    target: db
    mode: prepared
    clients: 2
    scripts: [{inline: "SELECT 1;"}]
  - name: reads
    target: cache
    clients: 2
    scripts: [{inline: "GET firedrill:k"}]
events:
  - {name: stall, target: cache, kind: disk_pressure, mode: slow, fsync_delay: 1s, at: 5s, duration: 5s, size: 8MB}
  - {name: hold, target: db, kind: hold_transaction, at: 5s, duration: 5s}
targets:
  db:
    kind: postgres
    setup: {sql: ["CREATE TABLE t (id int)"]}
  cache:
    kind: redis
    settings: {appendonly: "yes"}
    setup: {keys: {count: 10}}
`

// A scenario of several targets: each workload's scripts in its target's
// dialect, each event decoded with its target's kinds, each target's
// setup and kind keys its own, and each target's view a scenario of one.
func TestTargetsLoad(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(path, []byte(twoTargets), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := Load(path, kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sc.TargetNames(), ","); got != "db,cache" {
		t.Fatalf("targets %s", got)
	}
	if sc.Target.Kind != "postgres" || len(sc.Setup.SQL) != 1 {
		t.Errorf("the scenario's Target and Setup are not the first target's: %+v %+v", sc.Target, sc.Setup)
	}
	db, cache := sc.ForTarget("db"), sc.ForTarget("cache")
	if cache.Target.Kind != "redis" || cache.Dialect != redisdialect.Script() || cache.Setup.Keys.Count != 10 || cache.Setup.Schema != DefaultSchema ||
		len(cache.Workloads) != 1 || cache.Workloads[0].Name != "reads" || len(cache.Events) != 1 || cache.Events[0].Kind != "disk_pressure" ||
		cache.Targets != nil {
		t.Errorf("cache's view: %+v", cache)
	}
	if db.Dialect != pgdialect.Script() || len(db.Workloads) != 1 || db.Workloads[0].Target != "db" || len(db.Events) != 1 || db.Events[0].Name != "hold" {
		t.Errorf("db's view: %+v", db)
	}
	var dbKeys, cacheKeys []string
	for _, k := range db.KindKeys {
		dbKeys = append(dbKeys, k.Key)
	}
	for _, k := range cache.KindKeys {
		cacheKeys = append(cacheKeys, k.Key)
	}
	if strings.Join(dbKeys, ",") != "workloads.mode,setup.sql" || strings.Join(cacheKeys, ",") != "target.settings,setup.keys" {
		t.Errorf("kind keys: db %v, cache %v", dbKeys, cacheKeys)
	}
	// --dsn NAME=URL gives one target a server, and its scheme its kind.
	opts := kinds.Registry().ScenarioOptions()
	opts.DSNs = map[string]string{"cache": "redis://127.0.0.1:1/0"}
	text := strings.Replace(twoTargets, "    kind: redis\n    settings: {appendonly: \"yes\"}\n", "", 1)
	given, err := Parse(path, []byte(text), opts)
	if err != nil {
		t.Fatal(err)
	}
	if v := given.ForTarget("cache"); v.Target.DSN != "redis://127.0.0.1:1/0" || v.Dialect != redisdialect.Script() {
		t.Errorf("--dsn cache=…: %+v", v.Target)
	}
}

// Mistakes of a scenario of several targets, each at its place.
func TestTargetsErrors(t *testing.T) {
	t.Parallel()
	const base = "name: x\nduration: 10s\n"
	tests := []struct {
		name, text, want string
		dsns             map[string]string
	}{
		{name: "both target and targets",
			text: base + "target: {kind: postgres}\ntargets: {db: {kind: postgres}}\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\n",
			want: "x.yaml:3:9: target and targets are both given"},
		{name: "a workload names no target among several",
			text: base + "targets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads:\n  - {name: w, clients: 1, scripts: [select-only]}\n",
			want: "x.yaml:5:5: workload \"w\": name its target (targets: db, cache)"},
		{name: "an unknown target",
			text: base + "targets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads:\n  - {name: w, target: cahce, clients: 1, scripts: [select-only]}\n",
			want: "x.yaml:5:23: workload \"w\": no target \"cahce\"; did you mean \"cache\"? (targets: db, cache)"},
		{name: "a script in the wrong target's dialect",
			text: base + "targets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads:\n  - {name: w, target: cache, clients: 1, scripts: [{inline: \"SET k \\\"open\"}]}\n",
			want: "x.yaml:5:61: inline script, line 1, column 7"},
		{name: "a kind key the target's kind does not take is the backend's to judge, but setup at the top is refused",
			text: base + "targets: {db: {kind: postgres}}\nsetup: {sql: [\"SELECT 1\"]}\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\n",
			want: "x.yaml:4:8: setup: goes inside a target"},
		{name: "an event of a kind its target does not take",
			text: base + "targets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads: [{name: w, target: db, clients: 1, scripts: [select-only]}]\nevents:\n  - {target: cache, kind: hold_transaction, at: 1s, duration: 1s}\n",
			want: "x.yaml:6:27: kind: unknown kind"},
		{name: "an event names no target among several",
			text: base + "targets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads: [{name: w, target: db, clients: 1, scripts: [select-only]}]\nevents:\n  - {kind: shell, command: 'true', at: 1s}\n",
			want: "x.yaml:6:5: event 1: name its target (targets: db, cache)"},
		{name: "database: names a target written after it",
			text: base + "targets:\n  api: {kind: http, embedded: journal-api, database: db}\n  db: {kind: postgres}\nworkloads: [{name: w, target: db, clients: 1, scripts: [select-only]}]\n",
			want: "x.yaml:4:54: database: no target \"db\" before api (targets open in the file's order: write the database's target first)"},
		{name: "database: names the target itself",
			text: base + "targets:\n  api: {kind: http, embedded: journal-api, database: api}\nworkloads: [{name: w, target: api, clients: 1, scripts: [select-only]}]\n",
			want: "x.yaml:4:54: database: api is this target itself"},
		{name: "database: in a scenario of one system",
			text: base + "target: {kind: http, embedded: journal-api, database: db}\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\n",
			want: "x.yaml:3:45: database: names another target, and this scenario has one"},
		{name: "embedded and url",
			text: base + "targets:\n  db: {kind: postgres}\n  api: {kind: http, url: \"http://127.0.0.1:1\", embedded: journal-api, database: db}\nworkloads: [{name: w, target: db, clients: 1, scripts: [select-only]}]\n",
			want: "x.yaml:5:48: target has both embedded and a url"},
		{name: "--dsn names no target",
			text: base + "targets: {db: {kind: postgres}}\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\n",
			dsns: map[string]string{"shard2": "postgres://127.0.0.1:1/x"},
			want: "--dsn shard2=…: the scenario has no target \"shard2\" (targets: db)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := kinds.Registry().ScenarioOptions()
			opts.DSNs = tt.dsns
			_, err := Parse("x.yaml", []byte(tt.text), opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// The copy of a scenario a run keeps masks the password of every
// target's dsn.
func TestTargetsRedactedSource(t *testing.T) {
	t.Parallel()
	text := "name: x\ntargets:\n  db: {kind: postgres, dsn: \"postgres://u:pw-one@h/d\"}\n  cache:\n    dsn: redis://:pw-two@h:6379/0\n"
	s := &Scenario{Source: []byte(text)}
	got := string(s.RedactedSource(func(v string) string {
		return strings.NewReplacer("pw-one", "xxxxx", "pw-two", "xxxxx").Replace(v)
	}))
	if strings.Contains(got, "pw-") || !strings.Contains(got, "postgres://u:xxxxx@h/d") || !strings.Contains(got, "redis://:xxxxx@h:6379/0") {
		t.Errorf("redacted:\n%s", got)
	}
}
