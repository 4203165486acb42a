package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// redisAdminPassword is the user's server's requirepass: the admin URL's.
const redisAdminPassword = "users-admin-pw-31"

// redisUsersServer is a Redis standing for a user's own: a password (the
// default user is the admin), keys of every type in databases 0 and 1,
// some with TTLs, an application's ACL user, a function library, and
// maxmemory-policy allkeys-lru (so that a maxmemory change would evict).
func redisUsersServer(t *testing.T) (*redisinstance.Instance, *redisconn.Conn) {
	t.Helper()
	inst, err := redisinstance.Start(context.Background(), redisinstance.Options{Password: redisAdminPassword})
	if err != nil {
		t.Fatal(err) // a missing redis-server fails: CI installs it
	}
	t.Cleanup(func() { inst.Stop() })
	c, err := redisconn.Dial(context.Background(), redisconn.Config{Network: "tcp", Addr: inst.Addr(), Password: redisAdminPassword, Name: "test-admin"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var cmds [][]string
	for _, db := range []string{"0", "1"} {
		cmds = append(cmds, [][]string{
			{"SELECT", db},
			{"SET", "user:1", "ann-" + db}, {"SET", "counter", "41", "EX", "86400"},
			{"RPUSH", "queue", "a", "b", "c"}, {"PEXPIRE", "queue", "3600000"},
			{"HSET", "session:9", "id", "9", "cart", "3 items"}, {"EXPIRE", "session:9", "600"},
			{"SADD", "tags", "x", "y"}, {"ZADD", "rank", "1", "ann", "2", "bob"},
			{"XADD", "events", "1-1", "kind", "signup"}, {"XGROUP", "CREATE", "events", "mailer", "0"},
		}...)
	}
	cmds = append(cmds, [][]string{
		{"SELECT", "0"},
		{"ACL", "SETUSER", "app", "on", ">app-pw-5", "~user:*", "~counter", "+@read", "+@write"},
		{"FUNCTION", "LOAD", "#!lua name=userlib\n" +
			"redis.register_function('bump', function(keys) return redis.call('INCR', keys[1]) end)\n" +
			"redis.register_function('wipe', function() return redis.call('DEL', 'user:1') end)"},
		{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"},
	}...)
	for _, cmd := range cmds {
		if _, err := c.Do(context.Background(), cmd...); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	return inst, c
}

// redisKey is one user key's value and TTL.
type redisKey struct {
	dump     string
	expireAt int64 // unix ms; 0 for none
}

// redisState is what a run must leave as it was: every key not
// firedrill's in every database (DUMP, and PTTL as a deadline), the ACL
// users, the configuration and the function libraries.
type redisState struct {
	keys      map[string]redisKey // "db/key"
	acl       string
	config    string
	functions string
}

func redisFingerprint(t *testing.T, c *redisconn.Conn) redisState {
	t.Helper()
	ctx := context.Background()
	do := func(args ...string) redisconn.Reply {
		t.Helper()
		r, err := c.Do(ctx, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return r
	}
	st := redisState{keys: map[string]redisKey{}}
	for db := range 16 {
		do("SELECT", fmt.Sprint(db))
		for _, key := range do("KEYS", "*").Strings() {
			if strings.HasPrefix(key, "firedrill:") || strings.HasPrefix(key, "firedrill-admin:") {
				continue
			}
			k := redisKey{dump: do("DUMP", key).Text()}
			if pttl := do("PTTL", key).Int; pttl >= 0 {
				k.expireAt = time.Now().UnixMilli() + pttl
			}
			st.keys[fmt.Sprintf("%d/%s", db, key)] = k
		}
	}
	do("SELECT", "0")
	st.acl = strings.Join(do("ACL", "LIST").Strings(), "\n")
	config := do("CONFIG", "GET", "*").Strings()
	var pairs []string
	for i := 0; i+1 < len(config); i += 2 {
		pairs = append(pairs, config[i]+" = "+config[i+1])
	}
	slices.Sort(pairs)
	st.config = strings.Join(pairs, "\n")
	st.functions = flatten(do("FUNCTION", "LIST", "WITHCODE"))
	return st
}

// flatten is a nested reply as text.
func flatten(r redisconn.Reply) string {
	if len(r.Elems) == 0 {
		return r.Text()
	}
	parts := make([]string, len(r.Elems))
	for i, e := range r.Elems {
		parts[i] = flatten(e)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// sameRedisState fails t for every difference: a key gone, added or
// changed, a TTL moved by more than 2 s, ACL users, settings, functions.
func sameRedisState(t *testing.T, before, after redisState) {
	t.Helper()
	for name, b := range before.keys {
		a, ok := after.keys[name]
		switch {
		case !ok:
			t.Errorf("key %s is gone", name)
		case a.dump != b.dump:
			t.Errorf("key %s changed", name)
		case (a.expireAt == 0) != (b.expireAt == 0) || a.expireAt-b.expireAt > 2000 || b.expireAt-a.expireAt > 2000:
			t.Errorf("key %s: TTL deadline %d, was %d", name, a.expireAt, b.expireAt)
		}
	}
	for name := range after.keys {
		if _, ok := before.keys[name]; !ok {
			t.Errorf("key %s is new", name)
		}
	}
	if after.acl != before.acl {
		t.Errorf("ACL users changed:\n%s\nwere:\n%s", after.acl, before.acl)
	}
	if after.config != before.config {
		t.Errorf("configuration changed:\n%s", lineDiff(before.config, after.config))
	}
	if after.functions != before.functions {
		t.Errorf("functions changed:\n%s\nwere:\n%s", after.functions, before.functions)
	}
}

// lineDiff lists the lines of b not in a and of a not in b.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for _, l := range bl {
		if !slices.Contains(al, l) {
			out = append(out, "+ "+l)
		}
	}
	for _, l := range al {
		if !slices.Contains(bl, l) {
			out = append(out, "- "+l)
		}
	}
	return strings.Join(out, "\n")
}

// runUsers are the ACL users runs made that exist now.
func runUsers(t *testing.T, c *redisconn.Conn) []string {
	t.Helper()
	r, err := c.Do(context.Background(), "ACL", "USERS")
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, u := range r.Strings() {
		if strings.HasPrefix(u, "firedrill_run_") {
			users = append(users, u)
		}
	}
	return users
}

// redisEscapes are commands that would destroy or change the user's data
// if firedrill's sessions could run them: those of issue 20 and more. Each
// is written as redis-cli takes it, after SET firedrill:x so that the
// commands that copy or rename it have a source.
var redisEscapes = []struct{ name, command string }{
	{"eval-flushdb", `EVAL "redis.call('FLUSHDB')" 0`},
	{"eval-flushall", `EVAL "redis.call('FLUSHALL')" 0`},
	{"lua-scan-del", `EVAL "local r = redis.call('SCAN', '0', 'COUNT', '1000') for _, k in ipairs(r[2]) do redis.call('DEL', k) end return #r[2]" 0`},
	{"lua-select-swapdb", `EVAL "redis.call('SELECT', '0') return redis.call('SWAPDB', '0', '1')" 0`},
	{"lua-keys-unlink", `EVAL "for _, k in ipairs(redis.call('KEYS', '*')) do redis.call('UNLINK', k) end" 0`},
	{"lua-declared-key", `EVAL "return redis.call('DEL', KEYS[1])" 1 user:1`},
	{"lua-config-set", `EVAL "return redis.call('CONFIG', 'SET', 'maxmemory', '1mb')" 0`},
	{"lua-acl-setuser", `EVAL "return redis.call('ACL', 'SETUSER', 'app', 'off')" 0`},
	{"copy-other-db", `COPY firedrill:x user:1 DB 0 REPLACE`},
	{"copy-same-db", `COPY firedrill:x user:1 REPLACE`},
	{"move", `MOVE firedrill:x 0`},
	{"select", `SELECT 0`},
	{"swapdb", `SWAPDB 0 1`},
	{"flushall", `FLUSHALL`},
	{"flushdb", `FLUSHDB ASYNC`},
	{"del", `DEL user:1 queue`},
	{"unlink", `UNLINK rank tags`},
	{"rename-from", `RENAME user:1 firedrill:stolen`},
	{"rename-to", `RENAME firedrill:x user:1`},
	{"expire", `EXPIRE user:1 1`},
	{"persist", `PERSIST counter`},
	{"xtrim", `XTRIM events MAXLEN 0`},
	{"xgroup-destroy", `XGROUP DESTROY events mailer`},
	{"sunionstore", `SUNIONSTORE tags firedrill:none`},
	{"config-set", `CONFIG SET maxmemory 1mb`},
	{"config-set-policy", `CONFIG SET maxmemory-policy allkeys-random`},
	{"config-rewrite", `CONFIG REWRITE`},
	{"acl-setuser", `ACL SETUSER app off`},
	{"acl-new-admin", `ACL SETUSER firedrill_evil on >x ~* +@all`},
	{"acl-deluser", `ACL DELUSER app`},
	{"forge-restore-record", `HSET firedrill-admin:settings_restore maxmemory '{"original":"1048576","applied":"0"}'`},
	{"function-load", `FUNCTION LOAD REPLACE "#!lua name=userlib\nredis.register_function('bump', function() return redis.call('FLUSHALL') end)"`},
	{"function-flush", `FUNCTION FLUSH`},
	{"function-delete", `FUNCTION DELETE userlib`},
	{"fcall-user-key", `FCALL bump 1 counter`},
	{"fcall-user-function", `FCALL wipe 0`},
	{"sort-get", `SORT firedrill:x BY nosort GET user:*`},
	{"restore-replace", `RESTORE user:1 0 "x" REPLACE`},
	{"client-kill", `CLIENT KILL TYPE normal`},
	{"client-pause", `CLIENT PAUSE 10000 WRITE`},
	{"shutdown", `SHUTDOWN NOSAVE`},
}

// redisEscapeScenario runs each escape as a workload of its own and as a
// command event, with a settings event that the admin makes and puts back.
func redisEscapeScenario() string {
	var b strings.Builder
	b.WriteString("name: redis-escapes\nduration: 3s\nabort_on_failure: false\nsetup: {keys: {count: 10}}\nworkloads:\n")
	for _, e := range redisEscapes {
		fmt.Fprintf(&b, "  - name: %s\n    clients: 1\n    rate: 50\n    scripts:\n      - inline: |\n          SET firedrill:x evil\n          %s\n", e.name, e.command)
	}
	b.WriteString("events:\n  - {name: fsync, kind: settings, at: 200ms, settings: {appendfsync: \"no\"}}\n")
	for i, e := range redisEscapes {
		fmt.Fprintf(&b, "  - name: cmd-%s\n    kind: command\n    at: %dms\n    command:\n      - SET firedrill:x evil\n      - |-\n        %s\n", e.name, 300+50*i, e.command)
	}
	return b.String()
}

// Every escape of issue 20 and more, in workloads' scripts and in command
// events, with the lexical check off: the confined ACL user's privileges
// alone keep every key (value and TTL, both databases), ACL user,
// setting and function of the user's server as it was. The ACL user
// exists only during the run; the settings event, made as the admin, is
// put back; a forged restore record is never acted on.
func TestRedisEscapesAreRefusedByPrivilegesAlone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	inst, admin := redisUsersServer(t)
	before := redisFingerprint(t, admin)
	dsn := fmt.Sprintf("redis://:%s@%s/1", redisAdminPassword, inst.Addr())
	sc, err := scenario.Parse("escapes.yaml", []byte(redisEscapeScenario()), kinds.Registry().ScenarioOptionsFor(dsn))
	if err != nil {
		t.Fatal(err)
	}
	// The lexical check alone refuses the escapes of command events.
	if err := runner.Validate(sc, runner.Options{Backends: kinds.Registry(), DSN: dsn}); err == nil || !strings.Contains(err.Error(), "redis.call(FLUSHDB)") {
		t.Errorf("validate: %v", err)
	}
	var duringRun []string
	var log strings.Builder
	res, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: dsn, RunDir: t.TempDir(), Log: &log, PrivilegesOnly: true,
		OnStart: func(string) { duringRun = runUsers(t, admin) }})
	t.Logf("log:\n%s", log.String())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Manifest.Status != timeline.StatusCompleted {
		t.Errorf("status %s", res.Manifest.Status)
	}
	sameRedisState(t, before, redisFingerprint(t, admin))
	if len(duringRun) != 1 {
		t.Errorf("ACL users of runs during the run: %v, want one", duringRun)
	}
	if left := runUsers(t, admin); len(left) != 0 {
		t.Errorf("ACL users left after the run: %v", left)
	}
	// Each escape was tried, and refused by the server.
	failed := map[string]timeline.WorkloadSummary{}
	for _, w := range res.Summary.Workloads {
		failed[w.Name] = w
	}
	for _, e := range redisEscapes {
		w := failed[e.name]
		if w.Failed == 0 || w.Count != 0 {
			t.Errorf("workload %s: %d transactions through, %d failed; want every one refused", e.name, w.Count, w.Failed)
		}
		for _, er := range w.Errors {
			// CONFIG and ACL are refused to every script: the server
			// refuses those before the ACL.
			if !strings.Contains(er.Message, "NOPERM") && !strings.Contains(er.Message, "can't") && !strings.Contains(er.Message, "not allowed from script") {
				t.Errorf("workload %s failed otherwise than by the ACL: %s", e.name, er.Message)
			}
		}
		line := fmt.Sprintf("event cmd-%s (command): ", e.name)
		i := strings.Index(log.String(), line)
		if i < 0 {
			t.Errorf("no outcome of event cmd-%s", e.name)
			continue
		}
		outcome := log.String()[i:]
		outcome = outcome[:min(len(outcome), len(line)+300)]
		if !strings.Contains(outcome, "command 2 (") || !strings.Contains(outcome, "failed after") {
			t.Errorf("event cmd-%s was not refused: %s", e.name, outcome)
		}
	}
	if !strings.Contains(log.String(), `appendfsync: set back to`) {
		t.Errorf("the settings event's change was not put back")
	}

}

// A maxmemory change that would evict the user's keys (allkeys-lru, used
// memory far above 1 MB) is refused before anything runs; a settings
// event that the server refuses midway leaves nothing changed and ends
// the run failed with the reason.
func TestRedisSettingsThatWouldHarmAreRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	inst, admin := redisUsersServer(t)
	// Enough of the user's data that 1 MB is far below it.
	for i := range 200 {
		if _, err := admin.Do(context.Background(), "SET", fmt.Sprintf("blob:%d", i), strings.Repeat("b", 10000)); err != nil {
			t.Fatal(err)
		}
	}
	before := redisFingerprint(t, admin)
	dsn := fmt.Sprintf("redis://:%s@%s/0", redisAdminPassword, inst.Addr())
	run := func(events string) (*runner.Result, string, error) {
		src := "name: harm\nduration: 2s\nworkloads: [{name: w, clients: 1, rate: 20, scripts: [{inline: \"INCR firedrill:n\"}]}]\nevents:\n" + events
		sc, err := scenario.Parse("harm.yaml", []byte(src), kinds.Registry().ScenarioOptionsFor(dsn))
		if err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		res, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: dsn, RunDir: t.TempDir(), Log: &log, PrivilegesOnly: true})
		return res, log.String(), err
	}

	_, log, err := run("  - {kind: settings, at: 500ms, settings: {maxmemory: 1mb}}\n")
	if err == nil || !strings.Contains(err.Error(), "harm.yaml:5:5: event settings-1") || !strings.Contains(err.Error(), "would evict keys that are not firedrill's") {
		t.Errorf("a maxmemory event that would evict: %v", err)
	}
	if strings.Contains(log, "workload w: starting") {
		t.Errorf("the load started:\n%s", log)
	}
	sameRedisState(t, before, redisFingerprint(t, admin))
	if left := runUsers(t, admin); len(left) != 0 {
		t.Errorf("ACL users left: %v", left)
	}

	res, log, err := run("  - {kind: settings, at: 500ms, settings: {appendfsync: \"no\", maxmemory-policy: no-such-policy}}\n")
	if err == nil || res == nil || res.Manifest.Status != timeline.StatusFailed || !strings.Contains(res.Manifest.Error, "no-such-policy") {
		t.Errorf("a settings event that fails midway: %v, manifest %+v", err, res)
	}
	if !strings.Contains(log, "what the event had set before is set back") {
		t.Errorf("log:\n%s", log)
	}
	sameRedisState(t, before, redisFingerprint(t, admin))
	if n, _ := admin.Do(context.Background(), "EXISTS", "firedrill-admin:settings_restore"); n.Int != 0 {
		t.Errorf("a restore record is left")
	}

	// A workload writes the record older firedrills kept under firedrill:
	// (the key pattern allows it) to make a restore set maxmemory 1 MB:
	// the next run and firedrill restore say what it holds, and set nothing.
	const forged = `HSET firedrill:settings_restore maxmemory '{"original":"1048576","applied":"0"}'`
	src := "name: forge\nduration: 1s\nworkloads: [{name: w, clients: 1, rate: 20, scripts: [{inline: \"" + strings.ReplaceAll(forged, `"`, `\"`) + "\"}]}]\n"
	sc, err := scenario.Parse("forge.yaml", []byte(src), kinds.Registry().ScenarioOptionsFor(dsn))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Run(context.Background(), runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: dsn, RunDir: t.TempDir(), PrivilegesOnly: true}); err != nil {
		t.Fatal(err)
	}
	if n, _ := admin.Do(context.Background(), "HLEN", "firedrill:settings_restore"); n.Int != 1 {
		t.Fatalf("the workload did not write the legacy record")
	}
	_, log, err = run("")
	if err != nil || !strings.Contains(log, "no longer trusts that key") {
		t.Errorf("the next run: %v, log:\n%s", err, log)
	}
	env, stdout, stderr := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"restore", "--dsn", dsn}); code != 0 {
		t.Fatalf("restore: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout.String(), `maxmemory was "1048576"`) || !strings.Contains(stdout.String(), "no longer trusts that key") {
		t.Errorf("restore does not note the legacy record:\n%s", stdout)
	}
	sameRedisState(t, before, redisFingerprint(t, admin))
}

// The confined ACL user exists only while a run does: after Ctrl-C it is
// gone; after SIGKILL it is left, and the next run or firedrill restore
// removes it, while the users of live runs (another shard's) stay.
func TestRedisRunUserLivesOnlyWithItsRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server and child processes")
	}
	inst, admin := redisUsersServer(t)
	before := redisFingerprint(t, admin)
	dsn := fmt.Sprintf("redis://:%s@%s/0", redisAdminPassword, inst.Addr())
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sc, []byte("name: lives\nduration: 60s\nworkloads: [{name: w, clients: 2, rate: 200, scripts: [{inline: \"INCR firedrill:n\"}]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	// start starts a run and returns it with the ACL user it made.
	start := func() (*syncBufferProc, string) {
		old := runUsers(t, admin)
		cmd, out := startCLI(t, privateTmp(t), "run", sc, "--dsn", dsn, "--out", runs, "--progress", "1s")
		if !waitUntil(60*time.Second, func() bool { return strings.Contains(out.String(), " tps ") }) {
			t.Fatalf("no progress line; output:\n%s", out)
		}
		for _, u := range runUsers(t, admin) {
			if !slices.Contains(old, u) {
				return &syncBufferProc{cmd: cmd, out: out}, u
			}
		}
		t.Fatalf("no new run user during the run: %s", out)
		return nil, ""
	}

	// Ctrl-C: Close removes it.
	p, user := start()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	if left := runUsers(t, admin); slices.Contains(left, user) {
		t.Errorf("after Ctrl-C the run user %s is left: %s", user, p.out)
	}

	// SIGKILL, while another run (a shard, say) is live: the next run
	// removes the killed run's user and leaves the live one's.
	live, liveUser := start()
	killed, killedUser := start()
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = killed.cmd.Wait()
	if !waitUntil(10*time.Second, func() bool { return !clientOf(t, admin, killedUser) }) {
		t.Fatalf("the killed run's clients are still connected")
	}
	if left := runUsers(t, admin); !slices.Contains(left, killedUser) {
		t.Fatalf("after SIGKILL the run user %s is gone already: %v", killedUser, left)
	}
	env, _, stderr := clikit.MemoryEnv("")
	short := filepath.Join(dir, "short.yaml")
	if err := os.WriteFile(short, []byte("name: short\nduration: 1s\nworkloads: [{name: w, clients: 1, rate: 10, scripts: [{inline: \"INCR firedrill:n\"}]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := Main(env, kinds.Registry(), []string{"run", short, "--dsn", dsn, "--out", runs}); code != 0 {
		t.Fatalf("next run: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "removed the ACL user "+killedUser) {
		t.Errorf("the next run did not say it removed %s:\n%s", killedUser, stderr)
	}
	left := runUsers(t, admin)
	if slices.Contains(left, killedUser) || !slices.Contains(left, liveUser) {
		t.Errorf("after the next run: %v; want %s gone and the live %s kept", left, killedUser, liveUser)
	}

	// SIGKILL again: firedrill restore removes it, and keeps the live one.
	killed, killedUser = start()
	_ = killed.cmd.Process.Signal(syscall.SIGKILL)
	_ = killed.cmd.Wait()
	waitUntil(10*time.Second, func() bool { return !clientOf(t, admin, killedUser) })
	env, stdout, stderr := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"restore", "--dsn", dsn}); code != 0 {
		t.Fatalf("restore: exit %d: %s", code, stderr)
	}
	left = runUsers(t, admin)
	if slices.Contains(left, killedUser) || !slices.Contains(left, liveUser) || !strings.Contains(stdout.String(), "removed the ACL user "+killedUser) {
		t.Errorf("after restore: %v (%s); want %s gone and the live %s kept", left, stdout, killedUser, liveUser)
	}
	_ = live.cmd.Process.Signal(syscall.SIGINT)
	_ = live.cmd.Wait()
	if left := runUsers(t, admin); len(left) != 0 {
		t.Errorf("ACL users left at the end: %v", left)
	}
	sameRedisState(t, before, redisFingerprint(t, admin))
}

// syncBufferProc is a firedrill child process and its output.
type syncBufferProc struct {
	cmd *exec.Cmd
	out *syncBuffer
}

// clientOf says whether a client is connected as user.
func clientOf(t *testing.T, c *redisconn.Conn, user string) bool {
	t.Helper()
	r, err := c.Do(context.Background(), "CLIENT", "LIST")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(r.Text(), "user="+user+" ") || strings.Contains(r.Text(), "name=firedrill-acl:"+user+" ")
}

// An admin URL that may not make ACL users gets, before anything runs,
// the ACL SETUSER to have an administrator run and where; a user made
// from that text works with --run-as, and is confined as the run's own
// (a FLUSHALL the lexical check cannot see is refused by the server).
func TestRedisGrantAndRunAs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	inst, admin := redisUsersServer(t)
	ctx := context.Background()
	if _, err := admin.Do(ctx, "ACL", "SETUSER", "ops", "on", ">ops-pw-8", "~*", "+@all", "-acl"); err != nil {
		t.Fatal(err)
	}
	before := redisFingerprint(t, admin)
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sc, []byte(`name: grant
duration: 2s
abort_on_failure: false
workloads:
  - {name: ok, clients: 1, rate: 50, scripts: [{inline: "INCR firedrill:n"}]}
  - name: flush
    clients: 1
    rate: 50
    scripts:
      - inline: |
          EVAL "local c = 'FLUSH' .. 'ALL' return redis.call(c)" 0
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ops := fmt.Sprintf("redis://ops:ops-pw-8@%s/0", inst.Addr())
	env, _, stderr := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"run", sc, "--dsn", ops, "--out", filepath.Join(dir, "runs"), "-q"}); code == 0 {
		t.Fatalf("a run whose admin may not ACL SETUSER exited 0")
	}
	msg := stderr.String()
	i := strings.Index(msg, "ACL SETUSER firedrill ")
	if i < 0 || !strings.Contains(msg, "redis at "+inst.Addr()) || !strings.Contains(msg, "--run-as") || !strings.Contains(msg, "--allow-outside-schema") ||
		strings.Contains(msg, "ops-pw-8") {
		t.Fatalf("the refusal does not give the grant:\n%s", msg)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "runs")); len(entries) != 1 {
		t.Errorf("run directories: %v", entries)
	}
	// An administrator runs the line, with a password of their choosing.
	line, _, _ := strings.Cut(msg[i:], "\n")
	args := strings.Fields(strings.ReplaceAll(line, ">PASSWORD", ">made-by-hand-9"))
	if _, err := admin.Do(ctx, args...); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	runAs := fmt.Sprintf("redis://firedrill:made-by-hand-9@%s/0", inst.Addr())
	env, _, stderr = clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"run", sc, "--dsn", ops, "--run-as", runAs, "--out", filepath.Join(dir, "runs"), "--json", filepath.Join(dir, "r.json")}); code != 0 {
		t.Fatalf("run --run-as: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr.String(), "made-by-hand-9") {
		t.Errorf("the output shows the --run-as password")
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "made-by-hand-9") {
		t.Errorf("result: %s", b)
	}
	if n, err := admin.Do(ctx, "GET", "firedrill:n"); err != nil || n.Text() == "" {
		t.Errorf("the ok workload wrote nothing as the --run-as user: %v", err)
	}
	after := redisFingerprint(t, admin)
	if !strings.Contains(after.acl, "user firedrill on") {
		t.Errorf("the --run-as user was removed: %s", after.acl)
	}
	after.acl = before.acl // the user made by hand is the one change
	sameRedisState(t, before, after)
}
