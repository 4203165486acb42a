package pgrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/mariadb/mdbdialect"
	"github.com/firedrill/firedrill/db/postgres/pgdialect"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// stock-deadlock: 16 clients, carts decrementing 3 of 50 SKUs in the order
// drawn (cart-random.sql); stock-sorted: the same with the SKUs sorted by
// least()/greatest() before locking.

func TestDeadlockFires(t *testing.T) {
	t.Parallel()
	fs := findingsOf(deadlock{}, openRecording(t, "stock-deadlock"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Critical || f.Workload != "cart" {
		t.Errorf("severity %s workload %q", f.Severity, f.Workload)
	}
	for _, s := range []string{"deadlocks", "cart-random.sql", "stock", "sku = :sku1", "sku = :sku2", "opposite orders"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	series := map[string]bool{}
	for _, e := range f.Evidence {
		series[e.Series] = true
	}
	for _, s := range []string{"pg_stat_database:deadlocks", "workload:cart.errors.40P01", "script:cart-random.sql:6", "script:cart-random.sql:7"} {
		if !series[s] {
			t.Errorf("no evidence from %s: %+v", s, f.Evidence)
		}
	}
	var detail bool
	for _, e := range f.Evidence {
		if strings.Contains(e.Text, "ShareLock") && strings.Contains(e.Text, "cycle of") {
			detail = true
		}
	}
	if !detail {
		t.Errorf("the 40P01 detail is not in the evidence")
	}
	for _, s := range []string{"ORDER BY sku FOR UPDATE", "sort the keys", ":sku3"} {
		if !strings.Contains(f.Remedy, s) {
			t.Errorf("remedy lacks %q: %s", s, f.Remedy)
		}
	}
}

func TestDeadlockQuiet(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"stock-sorted", "hotrow", "healthy", "commit", "journal-drill"} {
		if fs := findingsOf(deadlock{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %s %s", name, fs[0].Severity, fs[0].Headline)
		}
	}
}

// lockRun is a run whose manifest holds the scripts' commands (no run
// directory: the analysis reads the commands).
func lockRun(scripts ...timeline.ScriptInfo) *timeline.Run {
	return &timeline.Run{Manifest: timeline.Manifest{Format: timeline.Format, Interval: 1,
		Workloads: []timeline.WorkloadInfo{{Name: "w", Clients: 8, Stop: 60, Scripts: scripts}}}}
}

func scriptOf(name string, commands ...string) timeline.ScriptInfo {
	return timeline.ScriptInfo{Name: name, Weight: 1, Commands: commands}
}

// TestDeadlockLatent: no deadlock in the run, but the script allows one.
func TestDeadlockLatent(t *testing.T) {
	t.Parallel()
	run := lockRun(scriptOf("cart.sql", `\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
		"UPDATE stock SET qty = qty - 1 WHERE sku = :a;", "UPDATE stock SET qty = qty - 1 WHERE sku = :b;", "COMMIT;"))
	fs := findingsOf(deadlock{}, run)
	if len(fs) != 1 || fs[0].Severity != diagnose.Info || !strings.Contains(fs[0].Headline, "No deadlock in this run") {
		t.Fatalf("%+v", fs)
	}
	checkFinding(t, "latent", deadlock{}, fs[0], diagnose.RunEnd(run))
}

func TestDescribeDeadlockDetail(t *testing.T) {
	t.Parallel()
	got := describeDeadlockDetail("Process 8551 waits for ShareLock on transaction 753; blocked by process 8564.\n" +
		"Process 8564 waits for ExclusiveLock on tuple (0,25) of relation 16384 of database 5; blocked by process 8551.")
	for _, s := range []string{"cycle of 2 processes", "ShareLock on a transaction", "ExclusiveLock on a row of relation 16384"} {
		if !strings.Contains(got, s) {
			t.Errorf("%q lacks %q", got, s)
		}
	}
	if describeDeadlockDetail("no detail") != "" {
		t.Errorf("text without processes described")
	}
}

// The deadlock rule hands the lock-order check a MariaDB run's scripts
// in MySQL's dialect (backquoted names, ? placeholders), a PostgreSQL
// run's in PostgreSQL's.
func TestLockOrderSourcesDialect(t *testing.T) {
	t.Parallel()
	run := lockRun(scriptOf("cart.sql", `\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
		"UPDATE `stock` SET `qty` = `qty` - 1 WHERE `sku` = :a;", "UPDATE `stock` SET `qty` = `qty` - 1 WHERE `sku` = :b;", "COMMIT;"))
	if src := diagnose.LockOrderSources(run, pgdialect.Script()); len(src) != 1 || src[0].Dialect != pgdialect.Script() {
		t.Fatalf("PostgreSQL run: %+v", src)
	}
	src := diagnose.LockOrderSources(run, mdbdialect.Script())
	if len(src) != 1 || src[0].Dialect != mdbdialect.Script() {
		t.Fatalf("MariaDB run: %+v", src)
	}
	if a := sqlcheck.AnalyzeLockOrder(src); len(a.Inversions) == 0 || a.Inversions[0].Table != "stock" {
		t.Errorf("MariaDB run: inversions %+v, want one on stock", a.Inversions)
	}
}
