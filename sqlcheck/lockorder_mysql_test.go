package sqlcheck

import (
	"testing"
)

// TestLockOrderMySQL runs the lock-order analysis on scripts in the
// MySQL dialect (a MariaDB run's): backquoted names, # comments, LOCK IN
// SHARE MODE, sorted and unsorted carts.
func TestLockOrderMySQL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		scripts []testScript
		want    bool
		table   string
	}{
		{"cart order, backquoted names and # comments", []testScript{scriptOf("cart.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, "BEGIN;",
			"UPDATE `stock` SET `qty` = `qty` - 1 WHERE `sku` = :a; # the first item",
			"UPDATE `stock` SET `qty` = `qty` - 1 WHERE `sku` = :b;", "COMMIT;")}, true, "stock"},
		{"LOCK IN SHARE MODE then an update", []testScript{scriptOf("check.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, "START TRANSACTION;",
			"SELECT qty FROM stock WHERE sku = :a LOCK IN SHARE MODE;",
			"UPDATE stock SET qty = qty - 1 WHERE sku = :b;", "COMMIT;")}, true, "stock"},
		{"sorted cart", []testScript{scriptOf("cart.sql",
			`\set a random(1, 100)`, `\set b random(1, 100)`, `\set lo least(:a, :b)`, `\set hi greatest(:a, :b)`, "BEGIN;",
			"UPDATE `stock` SET qty = qty - 1 WHERE sku = :lo;", "UPDATE `stock` SET qty = qty - 1 WHERE sku = :hi;", "COMMIT;")}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := AnalyzeLockOrder(lockSources(mysqlScripts, tc.scripts...))
			if !tc.want {
				if len(a.Inversions) != 0 {
					t.Fatalf("found an inversion: %s", describe(a.Inversions[0]))
				}
				return
			}
			if len(a.Inversions) == 0 {
				t.Fatal("no inversion found")
			}
			if inv := a.Inversions[0]; inv.Table != tc.table {
				t.Errorf("inversion on %q, want %q: %s", inv.Table, tc.table, describe(inv))
			}
		})
	}
}
