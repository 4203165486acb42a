package mariadb

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
)

// TestLockWaits blocks an insert behind a bulk insert's AUTO-INC table
// lock (innodb_autoinc_lock_mode = 1), then an update behind a row lock,
// and finds each blocking pair with the right kind of lock.
func TestLockWaits(t *testing.T) {
	t.Parallel()
	smp := samplerOf(t, newSet(t), innodbLocksName)
	holder := openSession(t)
	exec(t, holder, "CREATE TABLE lw_test (id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO lw_test (v) VALUES (0), (0)")
	t.Cleanup(func() { exec(t, holder, "DROP TABLE lw_test") })
	waiter := openSession(t)
	holderID, waiterID := threadID(t, holder), threadID(t, waiter)

	cases := []struct {
		name     string
		hold     func() <-chan error // what the holder does, returning when it ends
		before   string              // what the waiter does first, if anything
		wait     string
		kind     string
		lockType string
	}{
		// INSERT … SELECT is a bulk insert: in mode 1 it holds the
		// table's AUTO-INC lock from its first row (after 2 s) to the end
		// of the statement (6 s), and a simple insert begun in between
		// (after 2.5 s) waits for it.
		{"auto-inc", func() <-chan error {
			return background(holder, "INSERT INTO lw_test (v) SELECT SLEEP(2) FROM seq_1_to_3")
		}, "SELECT SLEEP(2.5)", "INSERT INTO lw_test (v) VALUES (1)", mariadbmetric.LockAutoInc, "TABLE"},
		// A row lock held by an open transaction.
		{"row", func() <-chan error {
			exec(t, holder, "BEGIN", "UPDATE lw_test SET v = v + 1 WHERE id = 1")
			done := make(chan error, 1)
			go func() { done <- nil }()
			return done
		}, "", "UPDATE lw_test SET v = v + 1 WHERE id = 1", mariadbmetric.LockRecord, "RECORD"},
	}
	for _, c := range cases {
		held := c.hold()
		statements := []string{c.wait}
		if c.before != "" {
			statements = []string{c.before, c.wait}
		}
		waited := background(waiter, statements...)
		var pair mariadbmetric.BlockingPair
		values, detail := sampleUntil(t, smp, func(_ map[string]float64, detail any) bool {
			pairs, _ := detail.([]mariadbmetric.BlockingPair)
			for _, p := range pairs {
				if p.BlockedID == waiterID {
					pair = p
					return true
				}
			}
			return false
		})
		assertNoSampler(t, detail)
		if err := <-held; err != nil {
			t.Fatalf("%s: holder: %v", c.name, err)
		}
		if c.name == "row" {
			exec(t, holder, "COMMIT")
		}
		if err := <-waited; err != nil {
			t.Fatalf("%s: waiter: %v", c.name, err)
		}
		// The row's holder sits idle in its transaction: performance_schema
		// (on in these tests) gives its last statement.
		if c.name == "row" && (pair.BlockingQuery != "" || !strings.Contains(pair.BlockingLastQuery, "UPDATE lw_test SET v = v + 1 WHERE id = 1")) {
			t.Errorf("%s: the idle holder's statement %q, last statement %q; want its UPDATE as the last", c.name, pair.BlockingQuery, pair.BlockingLastQuery)
		}
		if pair.BlockingID != holderID || pair.Kind != c.kind || pair.LockType != c.lockType || !strings.HasSuffix(pair.Table, "`lw_test`") ||
			!strings.Contains(pair.BlockedQuery, c.wait) || pair.WaitS < 0 {
			t.Errorf("%s: pair %+v, want thread %d waiting for thread %d on a %s lock", c.name, pair, waiterID, holderID, c.kind)
		}
		if values[mariadbmetric.LocksBlocked] < 1 || values[mariadbmetric.LockWaits(c.kind)] < 1 || values[mariadbmetric.LocksBlockers] < 1 ||
			values[mariadbmetric.LocksRootBlockers] < 1 || values[mariadbmetric.Transactions] < 2 {
			t.Errorf("%s: values %v", c.name, values)
		}
	}
}

// TestLockKind classifies INNODB_LOCKS rows as MariaDB 10.11 shows them.
func TestLockKind(t *testing.T) {
	t.Parallel()
	cases := []struct{ lockType, mode, data, want string }{
		{"TABLE", "AUTO_INC", "", mariadbmetric.LockAutoInc},
		{"TABLE", "IX", "", mariadbmetric.LockTable},
		{"RECORD", "X", "5", mariadbmetric.LockRecord},
		{"RECORD", "S", "supremum pseudo-record", mariadbmetric.LockGap}, // the gap after the last record
		{"RECORD", "X,GAP", "7", mariadbmetric.LockGap},
	}
	for _, c := range cases {
		if got := LockKind(c.lockType, c.mode, c.data); got != c.want {
			t.Errorf("LockKind(%q, %q, %q) = %q, want %q", c.lockType, c.mode, c.data, got, c.want)
		}
	}
}
