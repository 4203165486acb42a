package sqlcheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/script"
)

// testScript is a workload script made of its commands' texts.
type testScript struct {
	name     string
	commands []string
}

func scriptOf(name string, commands ...string) testScript {
	return testScript{name: name, commands: commands}
}

// lockSources are the scripts of one workload of 8 clients that runs for
// 60 s, each a text of its commands, one a line, as a run without copies
// of its script files hands them over.
func lockSources(dialect script.Dialect, scripts ...testScript) []ScriptSource {
	var out []ScriptSource
	for _, s := range scripts {
		var b strings.Builder
		for _, c := range s.commands {
			b.WriteString(c)
			if !strings.HasPrefix(strings.TrimSpace(c), `\`) && !strings.HasSuffix(strings.TrimSpace(c), ";") {
				b.WriteString(";")
			}
			b.WriteString("\n")
		}
		out = append(out, ScriptSource{Workload: "w", Name: s.name, Text: []byte(b.String()), Dialect: dialect,
			Stop: 60, Clients: 8, Inputs: map[string]string{}})
	}
	return out
}

// describe is an inversion in a test's failure message.
func describe(inv Inversion) string {
	return fmt.Sprintf("%s: %s %s then %s; %s: %s %s then %s (same script %v, two tables %v)",
		inv.A.Name, inv.AFirst.Table, inv.AFirst.KeyText(), inv.AThen.KeyText(),
		inv.B.Name, inv.BFirst.Table, inv.BFirst.KeyText(), inv.BThen.KeyText(), inv.SameScript, inv.CrossTable)
}

func TestLockOrderAnalysis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		scripts []testScript
		want    string // "" no inversion; "same", "cross", "tables"
		table   string
	}{
		{"keys in the order drawn", []testScript{scriptOf("cart.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
			"UPDATE stock SET qty = qty - 1 WHERE sku = :a;", "UPDATE stock SET qty = qty - 1 WHERE sku = :b;", "COMMIT;")}, "same", "stock"},
		{"sorted with least and greatest", []testScript{scriptOf("cart.sql",
			`\set a random(1, :skus)`, `\set b random(1, :skus)`, `\set lo least(:a, :b)`, `\set hi greatest(:a, :b)`, "BEGIN;",
			"UPDATE stock SET qty = qty - 1 WHERE sku = :lo;", "UPDATE stock SET qty = qty - 1 WHERE sku = :hi;", "END;")}, "", ""},
		{"sorted by compare-and-swap steps, empty places skipped", []testScript{scriptOf("cart.sql",
			`\set s1 random(1, 20)`, `\set s2 random(1, 20)`, `\set s3 CASE WHEN random(1, 2) = 1 THEN random(1, 20) ELSE 0 END`,
			`\set t least(:s1, :s2)`, `\set s2 greatest(:s1, :s2)`, `\set s1 :t`,
			`\set t least(:s2, :s3)`, `\set s3 greatest(:s2, :s3)`, `\set s2 :t`,
			`\set t least(:s1, :s2)`, `\set s2 greatest(:s1, :s2)`, `\set s1 :t`,
			"BEGIN;", `\if :s1 > 0`, "UPDATE stock SET qty = qty - 1 WHERE sku = :s1;", `\endif`,
			"UPDATE stock SET qty = qty - 1 WHERE sku = :s2;", "UPDATE stock SET qty = qty - 1 WHERE sku = :s3;", "COMMIT;")}, "", ""},
		{"the second key derived upwards from the first", []testScript{scriptOf("pair.sql",
			`\set a random(1, 100)`, "BEGIN;",
			"SELECT * FROM stock WHERE sku = :a FOR UPDATE;", "UPDATE stock SET qty = 0 WHERE sku = :a + 1;", "COMMIT;")}, "", ""},
		{"disjoint key ranges", []testScript{scriptOf("transfer.sql",
			`\set from random(1, 50)`, `\set to random(51, 100)`, "BEGIN;",
			"UPDATE accounts SET b = b - 1 WHERE id = :from;", "UPDATE accounts SET b = b + 1 WHERE id = :to;", "COMMIT;")}, "", ""},
		{"two scripts with fixed opposite orders", []testScript{
			scriptOf("ab.sql", "BEGIN;", "UPDATE t SET v = 1 WHERE id = 1;", "UPDATE t SET v = 1 WHERE id = 2;", "COMMIT;"),
			scriptOf("ba.sql", "BEGIN;", "UPDATE t SET v = 1 WHERE id = 2;", "UPDATE t SET v = 1 WHERE id = 1;", "COMMIT;")}, "cross", "t"},
		{"two tables in opposite orders", []testScript{
			scriptOf("order.sql", `\set id random(1, 10)`, "BEGIN;", "UPDATE orders SET n = n + 1 WHERE id = :id;", "UPDATE invoices SET n = n + 1 WHERE id = :id;", "COMMIT;"),
			scriptOf("invoice.sql", `\set id random(1, 10)`, "BEGIN;", "DELETE FROM invoices WHERE id = :id;", "SELECT 1 FROM orders WHERE id = :id FOR UPDATE;", "COMMIT;")},
			"tables", "orders, invoices"},
		{"one ordered statement", []testScript{scriptOf("cart.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
			"SELECT sku FROM stock WHERE sku IN (:a, :b) ORDER BY sku FOR UPDATE;", "UPDATE stock SET qty = qty - 1 WHERE sku IN (:a, :b);", "COMMIT;")}, "", ""},
		{"autocommit: each statement its own transaction", []testScript{scriptOf("cart.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`,
			"UPDATE stock SET qty = qty - 1 WHERE sku = :a;", "UPDATE stock SET qty = qty - 1 WHERE sku = :b;")}, "", ""},
		{"SKIP LOCKED never waits", []testScript{scriptOf("queue.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
			"SELECT * FROM jobs WHERE id = :a FOR UPDATE SKIP LOCKED;", "SELECT * FROM jobs WHERE id = :b FOR UPDATE SKIP LOCKED;", "COMMIT;")}, "", ""},
		{"upserts keyed by random values", []testScript{scriptOf("upsert.sql",
			`\set a random(1, 20)`, `\set b random(1, 20)`, "BEGIN;",
			"INSERT INTO counters (k, n) VALUES (:a, 1) ON CONFLICT (k) DO UPDATE SET n = counters.n + 1;",
			"INSERT INTO counters (k, n) VALUES (:b, 1) ON CONFLICT (k) DO UPDATE SET n = counters.n + 1;", "COMMIT;")}, "same", "counters"},
		{"branches of an \\if take opposite orders", []testScript{scriptOf("branch.sql",
			`\set coin random(0, 1)`, "BEGIN;", `\if :coin = 1`,
			"UPDATE t SET v = 1 WHERE id = 1;", "UPDATE t SET v = 1 WHERE id = 2;", `\else`,
			"UPDATE t SET v = 1 WHERE id = 2;", "UPDATE t SET v = 1 WHERE id = 1;", `\endif`, "COMMIT;")}, "cross", "t"},
		{"pgbench's TPC-B-like", []testScript{scriptOf("tpcb-like",
			`\set aid random(1, 100000 * :scale)`, `\set bid random(1, 1 * :scale)`, `\set tid random(1, 10 * :scale)`, `\set delta random(-5000, 5000)`,
			"BEGIN;", "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
			"SELECT abalance FROM pgbench_accounts WHERE aid = :aid;", "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;",
			"UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;",
			"INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);", "END;")}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := AnalyzeLockOrder(lockSources(pgbenchScripts, tc.scripts...))
			if tc.want == "" {
				if len(a.Inversions) != 0 {
					inv := a.Inversions[0]
					t.Fatalf("found an inversion: %s", describe(inv))
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
				t.Errorf("got %s on %q, want %s on %q: %s", got, inv.Table, tc.want, tc.table, describe(inv))
			}
		})
	}
}
