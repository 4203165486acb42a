package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	redis "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// validate names each target's kind as the run would take it: from its
// dsn's scheme when it gives no kind, else the default kind.
func TestValidateTargetKinds(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kinds.yaml")
	text := "name: kinds\nduration: 5s\ntargets:\n  db: {dsn: \"postgres://u@127.0.0.1:1/x\"}\n  cache: {dsn: \"redis://127.0.0.1:1/0\"}\n  other:\n" +
		"workloads:\n  - {name: w, target: db, clients: 1, scripts: [{inline: \"SELECT 1;\"}]}\n" +
		"  - {name: c, target: cache, clients: 1, scripts: [{inline: \"GET firedrill:k\"}]}\n" +
		"  - {name: o, target: other, clients: 1, scripts: [{inline: \"SELECT 1;\"}]}\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	env, out, errb := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"validate", path}); code != 0 {
		t.Fatalf("validate: exit %d: %s", code, errb)
	}
	for _, want := range []string{"target db: postgres, given server", "target cache: redis, given server", "target other: postgres, embedded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("validate's output lacks %q:\n%s", want, out)
		}
	}
}

// The two-system example runs on two embedded servers on one clock:
// samples of both targets, the cache's AOF stall found and said to be
// about "cache", the database's lock queue about "db", the cache's stall
// pushing reads onto the database (fallbacks), the host sampled once a
// tick, and validate naming each target with its workloads and events.
func TestCacheAndDBExample(t *testing.T) {
	t.Parallel()
	const example = "../../examples/cache-and-db.yaml"
	env, out, errb := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"validate", example}); code != 0 {
		t.Fatalf("validate: exit %d: %s", code, errb)
	}
	for _, want := range []string{"target db: postgres, embedded; workloads: orders, balances (fallback); events: forgotten-session",
		"target cache: redis, embedded; workloads: balances; events: backup-copy"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("validate's output lacks %q:\n%s", want, out)
		}
	}

	runs := t.TempDir()
	env, out, errb = clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"run", example, "--out", runs, "--progress", "0"}); code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errb)
	}
	dirs, _ := filepath.Glob(filepath.Join(runs, "*-cache-and-db"))
	if len(dirs) != 1 {
		t.Fatalf("run directories %v", dirs)
	}
	run, err := timeline.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(run.Manifest.TargetNames(), ","); got != "db,cache" {
		t.Fatalf("targets %s", got)
	}
	sampled := map[string]bool{}
	hostAt := map[float64]int{} // the host's samples by time
	for _, s := range run.Samples {
		sampled[s.Target] = true
		if s.Source == hostmetric.Host {
			hostAt[s.T]++
			if s.Target != "" {
				t.Errorf("a host sample about target %q, want none (the machine is the run's)", s.Target)
			}
		}
	}
	if !sampled["db"] || !sampled["cache"] {
		t.Errorf("samples of targets %v, want db and cache", sampled)
	}
	if len(hostAt) < 30 {
		t.Errorf("host sampled at %d moments, want one a second", len(hostAt))
	}
	for at, n := range hostAt {
		if n != 1 {
			t.Errorf("host sampled %d times at %.1f s, want once a tick (not once per target)", n, at)
		}
	}
	for _, w := range run.Manifest.Workloads {
		if want := map[string]string{"orders": "db", "balances": "cache"}[w.Name]; w.Target != want {
			t.Errorf("workload %s on target %q, want %q", w.Name, w.Target, want)
		}
		if w.Name == "balances" && (w.Fallback == nil || w.Fallback.Target != "db" || len(w.Fallback.Scripts) != 1) {
			t.Errorf("workload balances: fallback %+v, want one script on db", w.Fallback)
		}
	}
	// The cache's stall pushes reads onto the database: the clients that
	// waited on the stalled cache fell back to it. (How many fell back
	// before the backup depends on the machine: on a quiet one a handful,
	// on a loaded one, or under the race detector, reads are slow enough
	// to fall back all along, so only the stall's are checked.)
	var before, during float64
	for _, iv := range run.Intervals {
		switch {
		case iv.Workload != "balances":
		case iv.Start >= 1 && iv.End <= 8:
			before += float64(iv.Fallbacks)
		case iv.Start >= 9 && iv.End <= 33:
			during += float64(iv.Fallbacks)
		}
	}
	t.Logf("fallbacks to the database: %.0f in the 24 s of the stall, %.0f in the 7 s before", during, before)
	if during < 100 {
		t.Errorf("fallbacks to the database: %.0f in the 24 s of the stall, want at least 100", during)
	}
	findings, ok, err := diagnose.Read(dirs[0])
	if err != nil || !ok {
		t.Fatalf("findings.json: %v (there: %v)", err, ok)
	}
	about := map[string]string{}
	for _, f := range findings {
		about[f.Rule] = f.Target
	}
	if about["aof-fsync-stall"] != "cache" {
		t.Errorf("aof-fsync-stall about %q, want cache (findings %v)", about["aof-fsync-stall"], about)
	}
	if about["idle-in-transaction-blocker"] != "db" {
		t.Errorf("idle-in-transaction-blocker about %q, want db (findings %v)", about["idle-in-transaction-blocker"], about)
	}
	for _, want := range []string{"aof-fsync-stall", "idle-in-transaction-blocker", "balances", "orders", "] cache: ", "] db: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the terminal summary lacks %q:\n%s", want, out)
		}
	}
}

// A scenario of several targets split over two shards: both shards drive
// both given servers (each its half of every workload's clients, the
// fallback too), shard 0 alone sets up, samples and fires events, and the
// merge keeps the targets.
func TestSplitRunOfSeveralTargets(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts two servers and child processes")
	}
	ctx := context.Background()
	pg, err := postgres.Start(ctx, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	rd, err := redis.Start(ctx, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Stop()
	tmp := privateTmp(t)
	sc := filepath.Join(tmp, "s.yaml")
	if err := os.WriteFile(sc, []byte(`name: split-two
targets:
  db:
    setup: {sql: ["CREATE TABLE IF NOT EXISTS kv (id int PRIMARY KEY, v int); INSERT INTO kv SELECT g, g FROM generate_series(1, 10) g ON CONFLICT DO NOTHING"]}
  cache: {}
duration: 3s
workloads:
  - name: orders
    target: db
    clients: 2
    scripts: [{inline: "SELECT v FROM kv WHERE id = 1;"}]
  - name: reads
    target: cache
    clients: 4
    scripts:
      - inline: |
          \set id random(1, 10)
          GET firedrill:k::id
    fallback:
      target: db
      after: 1us
      scripts: [{inline: "SELECT v FROM kv WHERE id = :id;"}]
events:
  - {kind: command, name: poke, target: cache, at: 1s, command: "SET firedrill:poked 1"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dsns := []string{"--dsn", fmt.Sprintf("db=postgres://%s@%s/%s?sslmode=disable", pg.User(), pg.TCPAddr(), pg.Database()), "--dsn", fmt.Sprintf("cache=redis://:%s@%s/0", rd.Password(), rd.Addr())}
	startAt := time.Now().Add(8 * time.Second).UTC().Format(time.RFC3339Nano)
	type child struct {
		wait func() error
		out  fmt.Stringer
	}
	var children []child
	for i := range 2 {
		args := append([]string{"run", sc, "-q", "--shard", fmt.Sprintf("%d/2", i), "--start-at", startAt,
			"--out", filepath.Join(tmp, fmt.Sprintf("shard-%d", i))}, dsns...)
		cmd, out := startCLI(t, tmp, args...)
		children = append(children, child{cmd.Wait, out})
	}
	for i, c := range children {
		if err := c.wait(); err != nil {
			t.Fatalf("shard %d/2: %v\n%s", i, err, c.out)
		}
		r := runDir(t, c.out.String(), filepath.Join(tmp, fmt.Sprintf("shard-%d", i)))
		if got := strings.Join(r.Manifest.TargetNames(), ","); got != "db,cache" {
			t.Errorf("shard %d: targets %q", i, got)
		}
		var fallbacks int64
		for _, iv := range r.Intervals {
			fallbacks += iv.Fallbacks
		}
		for _, w := range r.Manifest.Workloads {
			if want := map[string]int{"orders": 1, "reads": 2}[w.Name]; w.Clients != want {
				t.Errorf("shard %d: workload %s ran %d clients, want %d", i, w.Name, w.Clients, want)
			}
		}
		if fallbacks == 0 {
			t.Errorf("shard %d: no fallback to the database (after: 1us)", i)
		}
		if i > 0 && (len(r.Samples) > 0 || len(r.Marks) > 0) {
			t.Errorf("shard %d recorded %d samples and %d marks; only shard 0 samples and fires events", i, len(r.Samples), len(r.Marks))
		}
	}
	mergedDir := filepath.Join(tmp, "merged")
	runCLI(t, tmp, "merge", filepath.Join(tmp, "shard-0"), filepath.Join(tmp, "shard-1"), "--out", mergedDir)
	merged, err := timeline.Open(mergedDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(merged.Manifest.TargetNames(), ","); got != "db,cache" {
		t.Errorf("merged targets %q", got)
	}
	for _, w := range merged.Manifest.Workloads {
		if want := map[string]int{"orders": 2, "reads": 4}[w.Name]; w.Clients != want {
			t.Errorf("merged workload %s: %d clients, want %d", w.Name, w.Clients, want)
		}
	}
}
