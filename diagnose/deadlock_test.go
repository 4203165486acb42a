package diagnose

import (
	"strings"
	"testing"

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
	if f.Severity != Critical || f.Workload != "cart" {
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

func TestLockOrderAnalysis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		scripts []timeline.ScriptInfo
		want    string // "" no inversion; "same", "cross", "tables"
		table   string
	}{
		{"keys in the order drawn", []timeline.ScriptInfo{scriptOf("cart.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
			"UPDATE stock SET qty = qty - 1 WHERE sku = :a;", "UPDATE stock SET qty = qty - 1 WHERE sku = :b;", "COMMIT;")}, "same", "stock"},
		{"sorted with least and greatest", []timeline.ScriptInfo{scriptOf("cart.sql",
			`\set a random(1, :skus)`, `\set b random(1, :skus)`, `\set lo least(:a, :b)`, `\set hi greatest(:a, :b)`, "BEGIN;",
			"UPDATE stock SET qty = qty - 1 WHERE sku = :lo;", "UPDATE stock SET qty = qty - 1 WHERE sku = :hi;", "END;")}, "", ""},
		{"sorted by compare-and-swap steps, empty places skipped", []timeline.ScriptInfo{scriptOf("cart.sql",
			`\set s1 random(1, 20)`, `\set s2 random(1, 20)`, `\set s3 CASE WHEN random(1, 2) = 1 THEN random(1, 20) ELSE 0 END`,
			`\set t least(:s1, :s2)`, `\set s2 greatest(:s1, :s2)`, `\set s1 :t`,
			`\set t least(:s2, :s3)`, `\set s3 greatest(:s2, :s3)`, `\set s2 :t`,
			`\set t least(:s1, :s2)`, `\set s2 greatest(:s1, :s2)`, `\set s1 :t`,
			"BEGIN;", `\if :s1 > 0`, "UPDATE stock SET qty = qty - 1 WHERE sku = :s1;", `\endif`,
			"UPDATE stock SET qty = qty - 1 WHERE sku = :s2;", "UPDATE stock SET qty = qty - 1 WHERE sku = :s3;", "COMMIT;")}, "", ""},
		{"the second key derived upwards from the first", []timeline.ScriptInfo{scriptOf("pair.sql",
			`\set a random(1, 100)`, "BEGIN;",
			"SELECT * FROM stock WHERE sku = :a FOR UPDATE;", "UPDATE stock SET qty = 0 WHERE sku = :a + 1;", "COMMIT;")}, "", ""},
		{"disjoint key ranges", []timeline.ScriptInfo{scriptOf("transfer.sql",
			`\set from random(1, 50)`, `\set to random(51, 100)`, "BEGIN;",
			"UPDATE accounts SET b = b - 1 WHERE id = :from;", "UPDATE accounts SET b = b + 1 WHERE id = :to;", "COMMIT;")}, "", ""},
		{"two scripts with fixed opposite orders", []timeline.ScriptInfo{
			scriptOf("ab.sql", "BEGIN;", "UPDATE t SET v = 1 WHERE id = 1;", "UPDATE t SET v = 1 WHERE id = 2;", "COMMIT;"),
			scriptOf("ba.sql", "BEGIN;", "UPDATE t SET v = 1 WHERE id = 2;", "UPDATE t SET v = 1 WHERE id = 1;", "COMMIT;")}, "cross", "t"},
		{"two tables in opposite orders", []timeline.ScriptInfo{
			scriptOf("order.sql", `\set id random(1, 10)`, "BEGIN;", "UPDATE orders SET n = n + 1 WHERE id = :id;", "UPDATE invoices SET n = n + 1 WHERE id = :id;", "COMMIT;"),
			scriptOf("invoice.sql", `\set id random(1, 10)`, "BEGIN;", "DELETE FROM invoices WHERE id = :id;", "SELECT 1 FROM orders WHERE id = :id FOR UPDATE;", "COMMIT;")},
			"tables", "orders, invoices"},
		{"one ordered statement", []timeline.ScriptInfo{scriptOf("cart.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
			"SELECT sku FROM stock WHERE sku IN (:a, :b) ORDER BY sku FOR UPDATE;", "UPDATE stock SET qty = qty - 1 WHERE sku IN (:a, :b);", "COMMIT;")}, "", ""},
		{"autocommit: each statement its own transaction", []timeline.ScriptInfo{scriptOf("cart.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`,
			"UPDATE stock SET qty = qty - 1 WHERE sku = :a;", "UPDATE stock SET qty = qty - 1 WHERE sku = :b;")}, "", ""},
		{"SKIP LOCKED never waits", []timeline.ScriptInfo{scriptOf("queue.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
			"SELECT * FROM jobs WHERE id = :a FOR UPDATE SKIP LOCKED;", "SELECT * FROM jobs WHERE id = :b FOR UPDATE SKIP LOCKED;", "COMMIT;")}, "", ""},
		{"upserts keyed by random values", []timeline.ScriptInfo{scriptOf("upsert.sql",
			`\set a random(1, 20)`, `\set b random(1, 20)`, "BEGIN;",
			"INSERT INTO counters (k, n) VALUES (:a, 1) ON CONFLICT (k) DO UPDATE SET n = counters.n + 1;",
			"INSERT INTO counters (k, n) VALUES (:b, 1) ON CONFLICT (k) DO UPDATE SET n = counters.n + 1;", "COMMIT;")}, "same", "counters"},
		{"branches of an \\if take opposite orders", []timeline.ScriptInfo{scriptOf("branch.sql",
			`\set coin random(0, 1)`, "BEGIN;", `\if :coin = 1`,
			"UPDATE t SET v = 1 WHERE id = 1;", "UPDATE t SET v = 1 WHERE id = 2;", `\else`,
			"UPDATE t SET v = 1 WHERE id = 2;", "UPDATE t SET v = 1 WHERE id = 1;", `\endif`, "COMMIT;")}, "cross", "t"},
		{"pgbench's TPC-B-like", []timeline.ScriptInfo{scriptOf("tpcb-like",
			`\set aid random(1, 100000 * :scale)`, `\set bid random(1, 1 * :scale)`, `\set tid random(1, 10 * :scale)`, `\set delta random(-5000, 5000)`,
			"BEGIN;", "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
			"SELECT abalance FROM pgbench_accounts WHERE aid = :aid;", "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;",
			"UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;",
			"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);", "END;")}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := analyzeLockOrder(lockRun(tc.scripts...))
			if tc.want == "" {
				if len(a.Inversions) != 0 {
					inv := a.Inversions[0]
					t.Fatalf("found an inversion: %s", inversionHeadline(inv))
				}
				return
			}
			if len(a.Inversions) == 0 {
				t.Fatalf("no inversion found")
			}
			inv := a.Inversions[0]
			got := "cross"
			switch {
			case inv.SameScript:
				got = "same"
			case inv.CrossTable:
				got = "tables"
			}
			if got != tc.want || inv.Table != tc.table {
				t.Errorf("got %s on %q, want %s on %q: %s", got, inv.Table, tc.want, tc.table, inversionHeadline(inv))
			}
		})
	}
}

// TestDeadlockLatent: no deadlock in the run, but the script allows one.
func TestDeadlockLatent(t *testing.T) {
	t.Parallel()
	run := lockRun(scriptOf("cart.sql", `\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
		"UPDATE stock SET qty = qty - 1 WHERE sku = :a;", "UPDATE stock SET qty = qty - 1 WHERE sku = :b;", "COMMIT;"))
	fs := findingsOf(deadlock{}, run)
	if len(fs) != 1 || fs[0].Severity != Info || !strings.Contains(fs[0].Headline, "No deadlock in this run") {
		t.Fatalf("%+v", fs)
	}
	checkFinding(t, "latent", deadlock{}, fs[0], RunEnd(run))
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
