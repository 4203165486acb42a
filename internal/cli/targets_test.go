package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// The two-system example runs on two embedded servers on one clock:
// samples of both targets, the cache's AOF stall found and said to be
// about "cache", the database's lock queue about "db", and validate names
// each target with its workloads and events.
func TestCacheAndDBExample(t *testing.T) {
	t.Parallel()
	const example = "../../examples/cache-and-db.yaml"
	env, out, errb := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"validate", example}); code != 0 {
		t.Fatalf("validate: exit %d: %s", code, errb)
	}
	for _, want := range []string{"target db: postgres, embedded; workloads: orders; events: forgotten-session",
		"target cache: redis, embedded; workloads: sessions; events: backup-copy"} {
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
	for _, s := range run.Samples {
		sampled[s.Target] = true
	}
	if !sampled["db"] || !sampled["cache"] {
		t.Errorf("samples of targets %v, want db and cache", sampled)
	}
	for _, w := range run.Manifest.Workloads {
		if want := map[string]string{"orders": "db", "sessions": "cache"}[w.Name]; w.Target != want {
			t.Errorf("workload %s on target %q, want %q", w.Name, w.Target, want)
		}
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
	for _, want := range []string{"aof-fsync-stall", "idle-in-transaction-blocker", "sessions", "orders", "] cache: ", "] db: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the terminal summary lacks %q:\n%s", want, out)
		}
	}
}
