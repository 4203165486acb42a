package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	// waited on the stalled cache fell back to it, many more a second
	// than before the backup began (when a loaded machine may already
	// make a few reads slower than 20 ms).
	var before, during float64
	for _, iv := range run.Intervals {
		switch {
		case iv.Workload != "balances":
		case iv.End <= 8:
			before += float64(iv.Fallbacks)
		case iv.Start >= 9 && iv.End <= 33:
			during += float64(iv.Fallbacks)
		}
	}
	if during < 50 || during/24 < 2*before/8 {
		t.Errorf("fallbacks to the database: %.0f in the 24 s of the stall, %.0f in the 8 s before; want at least 50, and twice as many a second", during, before)
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
