package postgres

import (
	"context"
	"strings"
	"testing"
)

// TestBlockedUpdate blocks an UPDATE behind a table lock, then behind a row
// lock, and finds each blocking pair with the right sessions.
func TestBlockedUpdate(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{})
	smp := samplerOf(t, set, locksName)
	blocker := openSession(t, server.ConnString(), "locks-blocker")
	exec(t, blocker, "DROP TABLE IF EXISTS locks_test; CREATE TABLE locks_test (id int PRIMARY KEY, v int); INSERT INTO locks_test VALUES (1, 0), (2, 0)")
	blocked := openSession(t, server.ConnString(), "locks-blocked")

	cases := []struct {
		name     string
		hold     string // what the blocker does in its open transaction
		locktype string
		mode     string
		relation string
	}{
		// A table lock: the waiter waits for the relation itself.
		{"table lock", "LOCK TABLE locks_test IN SHARE MODE", "relation", "RowExclusiveLock", "locks_test"},
		// A row lock: the waiter waits for the blocker's transaction to end.
		{"row lock", "UPDATE locks_test SET v = v + 1 WHERE id = 1", "transactionid", "ShareLock", ""},
	}
	for _, c := range cases {
		exec(t, blocker, "BEGIN; "+c.hold)
		done := make(chan error, 1)
		go func() {
			_, err := blocked.Exec(context.Background(), "UPDATE locks_test SET v = v + 1 WHERE id = 1")
			done <- err
		}()
		var pair BlockingPair
		values, detail := sampleUntil(t, smp, func(_ map[string]float64, detail any) bool {
			pairs, _ := detail.([]BlockingPair)
			for _, p := range pairs {
				if p.BlockedPID == pid(blocked) {
					pair = p
					return true
				}
			}
			return false
		})
		exec(t, blocker, "COMMIT")
		if err := <-done; err != nil {
			t.Fatalf("%s: blocked UPDATE: %v", c.name, err)
		}
		assertNoSampler(t, values, detail)
		if pair.BlockingPID != pid(blocker) || pair.BlockedApp != "locks-blocked" || pair.BlockingApp != "locks-blocker" ||
			pair.BlockingState != "idle in transaction" || pair.LockType != c.locktype || pair.Mode != c.mode ||
			pair.Relation != c.relation || !strings.Contains(pair.BlockedQuery, "UPDATE locks_test") ||
			!strings.Contains(pair.BlockingQuery, c.hold) || pair.WaitS < 0 {
			t.Errorf("%s: pair %+v, want blocked pid %d behind pid %d on %s %s %q",
				c.name, pair, pid(blocked), pid(blocker), c.locktype, c.mode, c.relation)
		}
		if values["blocked"] < 1 || values["blocking_pairs"] < 1 || values["blockers"] < 1 ||
			values["root_blockers"] < 1 || values["lock_waits."+c.locktype] < 1 {
			t.Errorf("%s: values %v", c.name, values)
		}
	}
}
