package redis

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend"
	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/db/redis/redisevent"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

// parse loads a scenario body (the name and a workload are added) with
// Redis's kinds of event.
func parse(t *testing.T, body string) *scenario.Scenario {
	t.Helper()
	src := "name: t\nduration: 5s\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\n" + body
	sc, err := scenario.Parse("t.yaml", []byte(src), event.ScenarioOptions(backend.EventKindsOf(New())))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// usersServer is a Redis standing for a user's own: a password, keys of
// every type in two databases, and a setting of its own.
func usersServer(t *testing.T) (*redisinstance.Instance, *redisconn.Conn) {
	t.Helper()
	inst, err := redisinstance.Start(t.Context(), redisinstance.Options{Password: "users-pw-42"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Stop() })
	c, err := redisconn.Dial(t.Context(), redisconn.Config{Network: "tcp", Addr: inst.Addr(), Password: "users-pw-42"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, db := range []string{"0", "1"} {
		for _, cmd := range [][]string{
			{"SELECT", db}, {"SET", "user:1", "ann"}, {"HSET", "session:9", "id", "9", "ttl", "60"},
			{"RPUSH", "queue", "a", "b"}, {"SADD", "tags", "x"}, {"ZADD", "rank", "1", "ann"},
			{"SET", "counter", "41"}, {"EXPIRE", "counter", "86400"},
		} {
			if _, err := c.Do(t.Context(), cmd...); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
	}
	if _, err := c.Do(t.Context(), "CONFIG", "SET", "appendfsync", "always"); err != nil {
		t.Fatal(err)
	}
	return inst, c
}

// snapshot is every key of databases 0 and 1 but firedrill's, with its
// type and value (DUMP), and the settings the test changes.
func snapshot(t *testing.T, c *redisconn.Conn) string {
	t.Helper()
	var lines []string
	for _, db := range []string{"0", "1"} {
		if _, err := c.Do(t.Context(), "SELECT", db); err != nil {
			t.Fatal(err)
		}
		keys, err := c.Do(t.Context(), "KEYS", "*")
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range keys.Strings() {
			if strings.HasPrefix(key, redisevent.KeyPrefix) {
				continue
			}
			dump, err := c.Do(t.Context(), "DUMP", key)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, fmt.Sprintf("db%s %s %q", db, key, dump.Text()))
		}
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

// runEvents runs the scenario's events on the target, in order.
func runEvents(t *testing.T, tg backend.Target, sc *scenario.Scenario) {
	t.Helper()
	env := tg.(backend.Eventful).EventEnv(false, func(w string) string { return "firedrill:" + w })
	for _, spec := range sc.Events {
		ev, err := event.New(backend.EventKindsOf(New()), spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := ev.Run(t.Context(), env, nil); err != nil {
			t.Fatalf("event %s: %v", spec.Name, err)
		}
	}
}

// On a user's server a run keeps to firedrill's keys in the URL's
// database, and its CONFIG SETs are put back at Close: the user's keys
// and settings are as before.
func TestAGivenServerKeepsTheUsersKeysAndSettings(t *testing.T) {
	t.Parallel()
	inst, c := usersServer(t)
	before := snapshot(t, c)
	dsn := fmt.Sprintf("redis://:users-pw-42@%s/1", inst.Addr())
	sc := parse(t, "setup: {keys: {count: 2500, size: 10}}\n"+
		"events: [{kind: settings, at: 1s, settings: {appendfsync: \"no\", maxmemory-policy: allkeys-lru}}]\n")
	var log strings.Builder
	tg, err := New().Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsn, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if info := tg.Info(); info.Embedded || info.Address != inst.Addr() || info.Database != "1" {
		t.Errorf("Info %+v", info)
	}
	if err := tg.Setup(t.Context()); err != nil {
		t.Fatal(err)
	}
	runEvents(t, tg, sc)
	settings, err := tg.(backend.Configured).Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if settings["appendfsync"] != "no" || settings["maxmemory-policy"] != "allkeys-lru" || settings["redis_version"] == "" {
		t.Errorf("settings during the run: %v", settings)
	}
	if err := tg.Close(false); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, c); after != before {
		t.Errorf("the user's server changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Setup's keys are firedrill's, in database 1 only.
	for db, want := range map[string]int64{"0": 0, "1": 2500} {
		c.Do(t.Context(), "SELECT", db)
		var n int64
		cursor := "0"
		for {
			r, err := c.Do(t.Context(), "SCAN", cursor, "MATCH", setupKeyPrefix+"*", "COUNT", "1000")
			if err != nil {
				t.Fatal(err)
			}
			cursor = r.Elems[0].Text()
			n += int64(len(r.Elems[1].Elems))
			if cursor == "0" {
				break
			}
		}
		if n != want {
			t.Errorf("database %s has %d setup keys, want %d", db, n, want)
		}
	}
	if strings.Contains(log.String(), "users-pw-42") {
		t.Errorf("the log shows the password:\n%s", log.String())
	}
	if !strings.Contains(log.String(), `appendfsync: set back to "always"`) {
		t.Errorf("the log does not say what was restored:\n%s", log.String())
	}
}

// A run killed after a settings event leaves its change recorded: the
// next run's Open puts it back before anything runs.
func TestTheNextRunRestoresAKilledRunsSettings(t *testing.T) {
	t.Parallel()
	inst, c := usersServer(t)
	dsn := fmt.Sprintf("redis://:users-pw-42@%s/0", inst.Addr())
	sc := parse(t, "events: [{kind: settings, at: 1s, settings: {appendfsync: everysec}}]\n")
	tg, err := New().Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, tg, sc)
	// Killed: no Close, and the process's connections go with it. (Left
	// open, they close whenever the collector finalises them, and the
	// sweep below would see the run live or dead by chance.)
	tg.(*target).hold.Close()
	var log strings.Builder
	next, err := New().Open(t.Context(), backend.Spec{Scenario: parse(t, ""), DSN: dsn, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(false)
	if r, _ := c.Do(t.Context(), "CONFIG", "GET", "appendfsync"); r.Strings()[1] != "always" {
		t.Errorf("appendfsync %q after the next run's Open, want the user's always", r.Strings()[1])
	}
	if !strings.Contains(log.String(), "restored before the run appendfsync") {
		t.Errorf("log:\n%s", log.String())
	}
	// firedrill restore has nothing left to do, and says so.
	var out strings.Builder
	if err := New().Restore(t.Context(), dsn, "", &out); err != nil || !strings.HasPrefix(out.String(), "nothing to restore") {
		t.Errorf("restore: %v, %q", err, out.String())
	}
}

// The embedded server takes the scenario's settings, reports them, and
// Close removes it.
func TestEmbeddedServer(t *testing.T) {
	t.Parallel()
	sc := parse(t, "target: {kind: redis, settings: {appendonly: \"yes\", appendfsync: always}}\n"+
		"setup: {keys: {count: 10}}\n")
	tg, err := New().Open(t.Context(), backend.Spec{Scenario: sc, Connections: 12000})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(false)
	info := tg.Info()
	if !info.Embedded || info.ServerVersion == "" || info.DataDir == "" || info.Address == "" || info.ProductName() != "Redis" {
		t.Errorf("Info %+v", info)
	}
	if err := tg.Setup(t.Context()); err != nil {
		t.Fatal(err)
	}
	settings, err := tg.(backend.Configured).Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"appendonly": "yes", "appendfsync": "always", "latency-monitor-threshold": "10", "save": "",
		"maxclients": "12064"} {
		if got, ok := settings[name]; !ok || got != want {
			t.Errorf("setting %s = %q (%v), want %q", name, got, ok, want)
		}
	}
	env := tg.(backend.Eventful).EventEnv(false, nil)
	if env.Restart == nil || env.DataDir != info.DataDir || !strings.HasPrefix(env.ConnString, "redis://127.0.0.1:") {
		t.Errorf("EventEnv %+v", env)
	}
	dir := filepath.Dir(info.DataDir)
	if err := tg.Close(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left after Close (%v)", dir, err)
	}
}

func TestURLsFiredrillCannotUse(t *testing.T) {
	t.Parallel()
	sc := parse(t, "")
	for dsn, want := range map[string]string{
		"redis://h:1/x": "not a number",
		"rediss://h:6380/0?cacert=/no/such/ca.crt": "cacert: open /no/such/ca.crt",
		"rediss://h:6380/0?cert=/c.crt":            "cert= without key=",
		"redis://h:6380/0?cacert=/ca.crt":          "use rediss://",
	} {
		err := New().Preflight(backend.Spec{Scenario: sc, DSN: dsn})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Preflight(%s): %v, want %q", dsn, err, want)
		}
	}
}

func TestPasswordIsFoundWhereverTheURLHasIt(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"redis://u:p1@h:1/0":                 "p1",
		"redis://p2@h:1/0":                   "p2",
		"redis://h:1/0?password=p3":          "p3",
		"rediss://u:p4@h:1/0?cacert=/ca.crt": "p4",
		"redis://h:1/0":                      "",
	} {
		if got := New().Password(dsn); got != want {
			t.Errorf("Password(%s) = %q, want %q", dsn, got, want)
		}
	}
}

// On a given server, commands that reach past firedrill's keys are
// refused before anything runs (command events) or before the load
// (scripts), each at its place; --allow-outside-schema lets them through,
// and the embedded server takes them all.
func TestServerWideCommandsAreRefusedOnAGivenServer(t *testing.T) {
	t.Parallel()
	sc := parse(t, "events:\n  - {kind: command, at: 1s, command: [\"SET firedrill:a 1\", \"CONFIG SET save ''\"]}\n  - {kind: command, at: 2s, command: FLUSHALL}\n")
	const dsn = "redis://127.0.0.1:1/0"
	err := New().Preflight(backend.Spec{Scenario: sc, DSN: dsn})
	if err == nil || !strings.Contains(err.Error(), "t.yaml:5:5: event command-1: CONFIG SET") || !strings.Contains(err.Error(), "t.yaml:6:5: event command-2: FLUSHALL") {
		t.Errorf("Preflight: %v", err)
	}
	if err := New().Preflight(backend.Spec{Scenario: sc, DSN: dsn, AllowOutsideSchema: true}); err != nil {
		t.Errorf("Preflight with --allow-outside-schema: %v", err)
	}
	if err := New().Preflight(backend.Spec{Scenario: sc}); err != nil {
		t.Errorf("Preflight on the embedded server: %v", err)
	}

	src := "SET firedrill:k 1\n\\set db 3\nSELECT :db\nCONFIG GET save\nflushdb\n"
	s, err := script.ParseDialect("w.redis", []byte(src), script.NewSymbols(), redisdialect.Script())
	if err != nil {
		t.Fatal(err)
	}
	addr := redisconn.Config{Network: "tcp", Addr: "127.0.0.1:1"}
	given := &target{spec: backend.Spec{Scenario: sc, DSN: dsn}, conn: addr, work: addr}
	_, err = given.Workload(&scenario.Workload{Name: "w"}, []*script.Script{s}, "firedrill:w")
	if err == nil || !strings.Contains(err.Error(), "w.redis:3:1: SELECT reaches past") || !strings.Contains(err.Error(), "w.redis:5:1: FLUSHDB") ||
		strings.Contains(err.Error(), "CONFIG") {
		t.Errorf("Workload: %v", err)
	}
	given.spec.AllowOutsideSchema = true
	if _, err := given.Workload(&scenario.Workload{Name: "w"}, []*script.Script{s}, "firedrill:w"); err != nil {
		t.Errorf("Workload with --allow-outside-schema: %v", err)
	}
}

// An admin URL whose user may not make ACL users fails before anything
// runs, with the ACL SETUSER an administrator runs instead and where;
// with --allow-outside-schema it runs as that user, as before: there is
// nothing firedrill could have changed for it to restore, and it says so.
func TestARestrictedUserGetsTheGrantOrRunsOutside(t *testing.T) {
	t.Parallel()
	inst, c := usersServer(t)
	if _, err := c.Do(t.Context(), "ACL", "SETUSER", "app", "on", ">app-pw-7", "~app:*", "~firedrill:*", "+get", "+set", "+ping", "+select", "+info"); err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("redis://app:app-pw-7@%s/0", inst.Addr())
	_, err := New().Open(t.Context(), backend.Spec{Scenario: parse(t, ""), DSN: dsn})
	if err == nil || !strings.Contains(err.Error(), "redis at "+inst.Addr()) || !strings.Contains(err.Error(), "ACL SETUSER firedrill reset on >PASSWORD ~firedrill:*") ||
		!strings.Contains(err.Error(), "--run-as redis://firedrill@"+inst.Addr()+"/0 (with the PASSWORD above after the user name") || !strings.Contains(err.Error(), "--allow-outside-schema") ||
		strings.Contains(err.Error(), "app-pw-7") {
		t.Errorf("Open by a user without ACL rights: %v", err)
	}
	var log strings.Builder
	tg, err := New().Open(t.Context(), backend.Spec{Scenario: parse(t, ""), DSN: dsn, Log: &log, AllowOutsideSchema: true})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := tg.Setup(t.Context()); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if err := tg.Close(false); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !strings.Contains(log.String(), "note: before the run") || !strings.Contains(log.String(), "NOPERM") {
		t.Errorf("log:\n%s", log.String())
	}
	// A wrong password is no such note: it fails at once, saying where.
	_, err = New().Open(t.Context(), backend.Spec{Scenario: parse(t, ""), DSN: fmt.Sprintf("redis://app:wrong@%s/0", inst.Addr())})
	if err == nil || !strings.Contains(err.Error(), inst.Addr()) || strings.Contains(err.Error(), "wrong@") {
		t.Errorf("Open with a wrong password: %v", err)
	}
}

// setup.keys preloads every type with its sizes, by pipelined commands
// under firedrill:, and a second setup (the next run on a given server)
// makes the same keys again rather than growing them.
func TestSetupLoadsEveryType(t *testing.T) {
	t.Parallel()
	sc := parse(t, "target: {kind: redis}\nsetup:\n  keys:\n    count: 3\n    size: 7\n"+
		"    lists: {count: 2, length: 2500, size: 5}\n"+
		"    hashes: {count: 3, fields: 1200, size: 9}\n"+
		"    sets: {count: 1, members: 3000, size: 6}\n"+
		"    zsets: {count: 2, members: 1500}\n"+
		"    streams: {count: 1, entries: 1100, size: 20}\n")
	var log strings.Builder
	tg, err := New().Open(t.Context(), backend.Spec{Scenario: sc, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(false)
	c, err := redisconn.Dial(t.Context(), tg.(*target).conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	do := func(args ...string) redisconn.Reply {
		t.Helper()
		r, err := c.Do(t.Context(), args...)
		if err != nil || r.Err != nil {
			t.Fatalf("%v: %v %v", args, err, r.Err)
		}
		return r
	}
	for round := 1; round <= 2; round++ {
		if err := tg.Setup(t.Context()); err != nil {
			t.Fatalf("Setup, round %d: %v", round, err)
		}
		for _, tc := range []struct {
			key, typ, length string
			count            int64
		}{
			{"firedrill:key:", "string", "STRLEN", 7},
			{"firedrill:list:", "list", "LLEN", 2500},
			{"firedrill:hash:", "hash", "HLEN", 1200},
			{"firedrill:set:", "set", "SCARD", 3000},
			{"firedrill:zset:", "zset", "ZCARD", 1500},
			{"firedrill:stream:", "stream", "XLEN", 1100},
		} {
			keys := do("KEYS", tc.key+"*").Strings()
			want := map[string]int{"string": 3, "list": 2, "hash": 3, "set": 1, "zset": 2, "stream": 1}[tc.typ]
			if len(keys) != want {
				t.Errorf("round %d: %d keys %s*, want %d", round, len(keys), tc.key, want)
			}
			for _, key := range keys {
				if got := do("TYPE", key).Text(); got != tc.typ {
					t.Errorf("round %d: TYPE %s = %s, want %s", round, key, got, tc.typ)
				}
				if got := do(tc.length, key).Int; got != tc.count {
					t.Errorf("round %d: %s %s = %d, want %d", round, tc.length, key, got, tc.count)
				}
			}
		}
		// Each element has its size; members are distinct numbers.
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"LINDEX", "firedrill:list:2", "-1"}, "xxxxx"},
			{[]string{"HGET", "firedrill:hash:3", "f1200"}, "xxxxxxxxx"},
			{[]string{"SISMEMBER", "firedrill:set:1", "003000"}, "1"},
			{[]string{"ZSCORE", "firedrill:zset:1", strings.Repeat("0", 96) + "1500"}, "1500"},
		} {
			if got := do(tc.args...).Text(); got != tc.want {
				t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
			}
		}
		entry := do("XRANGE", "firedrill:stream:1", "-", "+", "COUNT", "1")
		if len(entry.Elems) != 1 || len(entry.Elems[0].Elems) != 2 || strings.Join(entry.Elems[0].Elems[1].Strings(), " ") != "v "+strings.Repeat("x", 20) {
			t.Errorf("a stream entry: %+v", entry)
		}
	}
	for _, want := range []string{"setup: 2 lists firedrill:list:1…2 of 2500 length of 5 bytes", "setup: 1 streams firedrill:stream:1…1 of 1100 entries of 20 bytes"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, log.String())
		}
	}
}

// A command of setup the server refuses (out of memory) fails setup with
// the collection's place in the file and the command.
func TestSetupSaysWhereItFailed(t *testing.T) {
	t.Parallel()
	inst, c := usersServer(t)
	if _, err := c.Do(t.Context(), "CONFIG", "SET", "maxmemory", "1"); err != nil {
		t.Fatal(err)
	}
	sc := parse(t, "setup:\n  keys:\n    hashes: {count: 2, fields: 10}\n")
	tg, err := New().Open(t.Context(), backend.Spec{Scenario: sc, DSN: fmt.Sprintf("redis://:users-pw-42@%s/0", inst.Addr())})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(false)
	err = tg.Setup(t.Context())
	if err == nil || !strings.Contains(err.Error(), "setup.keys.hashes at t.yaml:6:13: HSET firedrill:hash:1: ") || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("Setup with no memory left: %v", err)
	}
}
