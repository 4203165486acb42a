package redisevent

import (
	"context"
	"strings"
	"testing"

	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/event/eventtest"
	"github.com/firedrill/firedrill/scenario"
)

// TestDecode: each kind decodes its keys into its config and rejects what
// could not run.
func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		want    any
		wantErr string
	}{
		{"settings", `{kind: settings, at: 1s, settings: {appendfsync: "no", maxmemory-policy: allkeys-lru}}`,
			event.SettingsConfig{Settings: map[string]string{"appendfsync": "no", "maxmemory-policy": "allkeys-lru"}}, ""},
		{"settings empty", "{kind: settings, at: 1s, settings: {}}", nil, "settings: empty"},
		{"settings missing", "{kind: settings, at: 1s}", nil, "needs settings"},
		{"setting name with a space", `{kind: settings, at: 1s, settings: {"append fsync": "no"}}`, nil, "is not a setting name"},
		{"restart", "{kind: restart, at: 1s}", event.RestartConfig{}, ""},
		{"restart takes no keys", "{kind: restart, at: 1s, settings: {a: b}}", nil, "settings"},
		{"terminate a workload", "{kind: terminate, at: 1s, workload: oltp}", event.TerminateConfig[string]{Workload: "oltp"}, ""},
		{"terminate by type", "{kind: terminate, at: 1s, type: normal}", event.TerminateConfig[string]{By: "normal"}, ""},
		{"terminate replicas", "{kind: terminate, at: 1s, type: replica}", nil, "unknown client type"},
		{"terminate both", "{kind: terminate, at: 1s, type: normal, workload: oltp}", nil, "exactly one of workload or type"},
		{"terminate no such workload", "{kind: terminate, at: 1s, workload: olap}", nil, `no workload "olap"`},
		{"command", `{kind: command, at: 1s, command: "SET firedrill:k 'a b'"}`,
			commandConfig{Commands: [][]string{{"SET", "firedrill:k", "a b"}}}, ""},
		{"commands", `{kind: command, at: 1s, command: ["BGREWRITEAOF", "HSET firedrill:h f \"x\\ny\""]}`,
			commandConfig{Commands: [][]string{{"BGREWRITEAOF"}, {"HSET", "firedrill:h", "f", "x\ny"}}}, ""},
		// Keys such as chat:42:members need no escape; :name is a variable.
		{"literal colons", `{kind: command, at: 1s, command: "INCR chat:42:members"}`,
			commandConfig{Commands: [][]string{{"INCR", "chat:42:members"}}}, ""},
		{"a variable", `{kind: command, at: 1s, command: "GET user::id"}`, nil, "uses a :variable"},
		{"a meta-command", `{kind: command, at: 1s, command: "\\sleep 1"}`, nil, "not one Redis command"},
		{"unclosed quote", `{kind: command, at: 1s, command: "SET k \"v"}`, nil, ":9:38: command event \"command-1\": command: column"},
		{"two lines", "{kind: command, at: 1s, command: \"PING\\nPING\"}", nil, "own item"},
		{"no command", "{kind: command, at: 1s}", nil, "needs command"},
	}
	build := func(ev scenario.Event) error { _, err := event.New(kinds, ev); return err }
	for _, c := range tests {
		eventtest.CheckDecode(t, event.ScenarioOptions(append(Kinds(), event.Kinds()...)), build, c.name, c.event, c.want, c.wantErr)
	}
}

// A restart on a given server is refused where the scenario says so.
func TestRestartNeedsTheEmbeddedServer(t *testing.T) {
	t.Parallel()
	src := "name: r\nduration: 5s\ntarget: {dsn: \"redis://127.0.0.1:1/0\"}\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\nevents: [{kind: restart, at: 1s}]\n"
	_, err := scenario.Parse("r.yaml", []byte(src), event.ScenarioOptions(append(Kinds(), event.Kinds()...)))
	if err == nil || !strings.Contains(err.Error(), "restart needs the embedded target") {
		t.Errorf("restart with a dsn: %v", err)
	}
}

// startRedis starts a throwaway server stopped when the test ends.
func startRedis(t *testing.T) *redisinstance.Instance {
	t.Helper()
	inst, err := redisinstance.Start(t.Context(), redisinstance.Options{})
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop redis: %v", err)
		}
	})
	return inst
}

// build makes the event of one spec line.
func build(t *testing.T, spec string) event.Event {
	t.Helper()
	sc, err := eventtest.ParseEvent(spec, event.ScenarioOptions(append(Kinds(), event.Kinds()...)))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := event.New(kinds, sc.Events[0])
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// dial opens a connection to inst named name.
func dial(t *testing.T, inst *redisinstance.Instance, name string) *redisconn.Conn {
	t.Helper()
	c, err := redisconn.Dial(t.Context(), redisconn.Config{Network: "unix", Addr: inst.Socket(), Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func do(t *testing.T, c *redisconn.Conn, args ...string) redisconn.Reply {
	t.Helper()
	r, err := c.Do(t.Context(), args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}

func config(t *testing.T, c *redisconn.Conn, name string) string {
	t.Helper()
	return do(t, c, "CONFIG", "GET", name).Strings()[1]
}

// On the embedded server a settings event sets and reports what the
// server made of its values, and records nothing.
func TestSettingsOnTheEmbeddedServer(t *testing.T) {
	t.Parallel()
	inst := startRedis(t)
	env := &event.Env{Backend: &Target{Conn: redisconn.Config{Network: "unix", Addr: inst.Socket()}}}
	ev := build(t, `{name: relax, kind: settings, at: 1s, settings: {appendfsync: "no", maxmemory: 1gb}}`)
	outcome, detail, err := ev.Run(t.Context(), env, nil)
	if err != nil {
		t.Fatal(err)
	}
	if outcome != "appendfsync = no, maxmemory = 1073741824" {
		t.Errorf("outcome %q", outcome)
	}
	if detail["effective"].(map[string]string)["maxmemory"] != "1073741824" {
		t.Errorf("detail %v", detail)
	}
	c := dial(t, inst, "test")
	if got := config(t, c, "appendfsync"); got != "no" {
		t.Errorf("appendfsync %q after the event", got)
	}
	if n := do(t, c, "EXISTS", RestoreKey).Int; n != 0 {
		t.Errorf("the embedded server got a restore record")
	}
	// A value the server refuses is the event's error, naming it.
	bad := build(t, `{name: bad, kind: settings, at: 1s, settings: {appendfsync: sometimes}}`)
	if _, _, err := bad.Run(t.Context(), env, nil); err == nil || !strings.Contains(err.Error(), "CONFIG SET appendfsync sometimes") {
		t.Errorf("a refused value: %v", err)
	}
}

// On a given server every change is recorded before it is made, and
// RestoreSettings puts back firedrill's changes — also those of a run
// killed before it could — but not a value someone else changed since.
func TestSettingsAreRestoredOnAGivenServer(t *testing.T) {
	t.Parallel()
	inst := startRedis(t)
	cfg := redisconn.Config{Network: "unix", Addr: inst.Socket(), DB: 2}
	env := &event.Env{Backend: &Target{Conn: cfg, Given: true}}
	c := dial(t, inst, "test")
	before := map[string]string{}
	for _, name := range []string{"appendfsync", "maxmemory-policy", "slowlog-log-slower-than"} {
		before[name] = config(t, c, name)
	}
	ev := build(t, `{name: s1, kind: settings, at: 1s, settings: {appendfsync: always, maxmemory-policy: allkeys-lru, slowlog-log-slower-than: 5}}`)
	if _, _, err := ev.Run(t.Context(), env, nil); err != nil {
		t.Fatal(err)
	}
	// A second change of the same setting keeps the first original.
	ev2 := build(t, `{name: s2, kind: settings, at: 2s, settings: {appendfsync: "no"}}`)
	if _, _, err := ev2.Run(t.Context(), env, nil); err != nil {
		t.Fatal(err)
	}
	// Someone else changes one of them meanwhile.
	do(t, c, "CONFIG", "SET", "slowlog-log-slower-than", "7")
	// The record is in the URL's database, under firedrill's prefix.
	do(t, c, "SELECT", "2")
	if n := do(t, c, "HLEN", RestoreKey).Int; n != 3 {
		t.Errorf("%s holds %d settings, want 3", RestoreKey, n)
	}
	// As the next run after a kill would: nothing restored this run.
	restored, err := RestoreSettings(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range restored {
		lines = append(lines, r.String())
	}
	got := strings.Join(lines, "\n")
	eventtest.MustContain(t, "restored", got,
		`appendfsync: set back to "`+before["appendfsync"]+`"`,
		`maxmemory-policy: set back to "`+before["maxmemory-policy"]+`"`,
		`slowlog-log-slower-than: left alone: changed to "7" since by someone else`)
	for name, want := range map[string]string{"appendfsync": before["appendfsync"], "maxmemory-policy": before["maxmemory-policy"], "slowlog-log-slower-than": "7"} {
		if got := config(t, c, name); got != want {
			t.Errorf("%s = %q after restore, want %q", name, got, want)
		}
	}
	if n := do(t, c, "EXISTS", RestoreKey).Int; n != 0 {
		t.Errorf("the record is left after restoring")
	}
	// Nothing left: a second restore has nothing to do.
	if again, err := RestoreSettings(t.Context(), cfg); err != nil || len(again) != 0 {
		t.Errorf("second restore: %v, %v", again, err)
	}
}

// terminate kills a workload's connections (by their name) and leaves
// the others; by type it spares firedrill's own sessions.
func TestTerminate(t *testing.T) {
	t.Parallel()
	inst := startRedis(t)
	env := &event.Env{Backend: &Target{Conn: redisconn.Config{Network: "unix", Addr: inst.Socket()}},
		AppName: func(w string) string { return "firedrill:" + w }}
	victims := []*redisconn.Conn{dial(t, inst, "firedrill:oltp"), dial(t, inst, "firedrill:oltp")}
	other := dial(t, inst, "firedrill:batch")
	sampler := dial(t, inst, "firedrill-sampler")
	outcome, _, err := build(t, "{kind: terminate, at: 1s, workload: oltp}").Run(t.Context(), env, nil)
	if err != nil || outcome != "killed 2 client(s) of workload oltp" {
		t.Fatalf("terminate oltp: %q, %v", outcome, err)
	}
	for _, v := range victims {
		if _, err := v.Do(t.Context(), "PING"); err == nil {
			t.Errorf("a killed connection still answers")
		}
	}
	do(t, other, "PING")
	outcome, _, err = build(t, "{kind: terminate, at: 1s, type: normal}").Run(t.Context(), env, nil)
	if err != nil || outcome != "killed 1 client(s) of type normal" {
		t.Fatalf("terminate normal: %q, %v", outcome, err)
	}
	do(t, sampler, "PING")
	// On a given server, killing by type would hit the application.
	given := &event.Env{Backend: &Target{Conn: redisconn.Config{Network: "unix", Addr: inst.Socket()}, Given: true}}
	if _, _, err := build(t, "{kind: terminate, at: 1s, type: normal}").Run(t.Context(), given, nil); err == nil || !strings.Contains(err.Error(), "--allow-outside-schema") {
		t.Errorf("terminate by type on a given server: %v", err)
	}
}

// restart restarts the embedded server, which keeps its data, and is
// refused without one.
func TestRestart(t *testing.T) {
	t.Parallel()
	inst, err := redisinstance.Start(t.Context(), redisinstance.Options{Settings: map[string]string{"appendonly": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	c := dial(t, inst, "test")
	do(t, c, "SET", "k", "v")
	pid := inst.PID()
	env := &event.Env{Backend: &Target{}, Restart: func(ctx context.Context) error { return inst.Restart(ctx, nil) }}
	outcome, _, err := build(t, "{kind: restart, at: 1s}").Run(t.Context(), env, nil)
	if err != nil || !strings.HasPrefix(outcome, "restarted in ") {
		t.Fatalf("restart: %q, %v", outcome, err)
	}
	if inst.PID() == pid {
		t.Errorf("the same server after the restart")
	}
	c2 := dial(t, inst, "test2")
	if got := do(t, c2, "GET", "k").Text(); got != "v" {
		t.Errorf("GET k = %q after the restart", got)
	}
	if _, _, err := build(t, "{kind: restart, at: 1s}").Run(t.Context(), &event.Env{}, nil); err == nil {
		t.Error("restart without a restartable server succeeded")
	}
}

func TestParseClientList(t *testing.T) {
	t.Parallel()
	text := "id=3 addr=127.0.0.1:40000 laddr=127.0.0.1:6379 fd=8 name=firedrill:oltp age=1 idle=0 flags=N db=0\r\n" +
		"id=4 addr=/tmp/x.sock:0 fd=9 name= age=2 flags=U db=0\n"
	got := ParseClientList(text)
	if len(got) != 2 || got[0]["name"] != "firedrill:oltp" || got[0]["id"] != "3" || got[1]["name"] != "" || got[1]["id"] != "4" {
		t.Errorf("ParseClientList: %v", got)
	}
}

// command runs its commands in order, says what each replied, and stops
// at an error reply; on a given server it refuses server-wide commands.
func TestCommand(t *testing.T) {
	t.Parallel()
	inst := startRedis(t)
	conn := redisconn.Config{Network: "unix", Addr: inst.Socket()}
	env := &event.Env{Backend: &Target{Conn: conn}}
	outcome, detail, err := build(t, `{kind: command, at: 1s, command: ["SET firedrill:n 41", "INCR firedrill:n", "GET firedrill:none"]}`).Run(t.Context(), env, nil)
	if err != nil {
		t.Fatal(err)
	}
	eventtest.MustContain(t, "outcome", outcome, "SET firedrill:n 41 → OK in ", "INCR firedrill:n → 42 in ", "GET firedrill:none → (nil) in ")
	if n := len(detail["commands"].([]map[string]any)); n != 3 {
		t.Errorf("detail has %d commands", n)
	}
	_, _, err = build(t, `{kind: command, at: 1s, command: ["LPUSH firedrill:n x", "PING"]}`).Run(t.Context(), env, nil)
	if err == nil || !strings.Contains(err.Error(), "command 1 (LPUSH firedrill:n x) failed") || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("an error reply: %v", err)
	}
	given := &event.Env{Backend: &Target{Conn: conn, Given: true}}
	flush := build(t, `{kind: command, at: 1s, command: ["SET firedrill:n 1", "FLUSHDB"]}`)
	if _, _, err := flush.Run(t.Context(), given, nil); err == nil || !strings.Contains(err.Error(), "FLUSHDB reaches past") {
		t.Errorf("FLUSHDB on a given server: %v", err)
	}
	c := dial(t, inst, "test")
	if got := do(t, c, "GET", "firedrill:n").Text(); got != "42" {
		t.Errorf("a refused event ran a command: firedrill:n = %q", got)
	}
	allowed := &event.Env{Backend: &Target{Conn: conn, Given: true, AllowOutside: true}}
	if _, _, err := flush.Run(t.Context(), allowed, nil); err != nil {
		t.Errorf("FLUSHDB with --allow-outside-schema: %v", err)
	}
}

// CLIENT LIST is the server's text: whatever it holds, every client found
// has the fields its line gave, and no field is made up.
func FuzzParseClientList(f *testing.F) {
	f.Add("id=3 addr=127.0.0.1:40000 laddr=127.0.0.1:6379 fd=8 name=firedrill:oltp age=1 idle=0 flags=N db=0\r\n")
	f.Add("id=4 addr=/tmp/x.sock:0 fd=9 name= age=2\nid=5 name==x\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		for _, client := range ParseClientList(text) {
			for k, v := range client {
				if !strings.Contains(text, k+"="+v) {
					t.Fatalf("field %s=%s is not in %q", k, v, text)
				}
			}
		}
	})
}
