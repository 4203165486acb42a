package mariadb

import (
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
)

// TestProcesslist sees a session idle in an open transaction and one
// running a statement, by state, and leaves its own session out.
func TestProcesslist(t *testing.T) {
	t.Parallel()
	smp := samplerOf(t, newSet(t), processlistName)
	idle := openSession(t)
	exec(t, idle, "CREATE TABLE pl_test (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "BEGIN", "INSERT INTO pl_test VALUES (1, 0)")
	t.Cleanup(func() { exec(t, idle, "ROLLBACK", "DROP TABLE pl_test") })
	busy := openSession(t)
	idleID, busyID := threadID(t, idle), threadID(t, busy)
	done := background(busy, "SELECT SLEEP(5)")

	var sessions []mariadbmetric.Session
	values, detail := sampleUntil(t, smp, func(values map[string]float64, detail any) bool {
		sessions, _ = detail.([]mariadbmetric.Session)
		return values[mariadbmetric.State("User sleep")] >= 1 && values[mariadbmetric.IdleInTrx] >= 1
	})
	assertNoSampler(t, detail)
	if values[mariadbmetric.Connections] < 2 || values[mariadbmetric.Active] < 1 || values[mariadbmetric.OldestIdleInTrxS] < 0 ||
		values[mariadbmetric.LongestQueryS] <= 0 {
		t.Errorf("values %v", values)
	}
	var sawIdle, sawBusy bool
	for _, s := range sessions {
		switch s.ID {
		case idleID:
			sawIdle = s.Command == "Sleep" && s.TrxState == "RUNNING" && s.TrxAgeS >= 0
		case busyID:
			sawBusy = s.State == "User sleep" && strings.Contains(s.Query, "SLEEP(5)")
		}
	}
	if !sawIdle || !sawBusy {
		t.Errorf("sessions %+v: want the idle transaction (id %d) and the sleeping statement (id %d)", sessions, idleID, busyID)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestProcesslistReadsTransactionsOncePerSecond counts states on every
// sample but reads INNODB_TRX (and reports the transactions) only when a
// second has passed since it last did.
func TestProcesslistReadsTransactionsOncePerSecond(t *testing.T) {
	t.Parallel()
	smp := samplerOf(t, newSet(t), processlistName).(*processlist)
	clock := time.Now()
	smp.now = func() time.Time { return clock }
	idle := openSession(t)
	exec(t, idle, "CREATE TABLE pl_once (id INT PRIMARY KEY) ENGINE=InnoDB", "BEGIN", "INSERT INTO pl_once VALUES (1)")
	t.Cleanup(func() { exec(t, idle, "ROLLBACK", "DROP TABLE pl_once") })

	withTrx := func(step string, want bool) {
		t.Helper()
		values, detail := sample(t, smp)
		_, has := values[mariadbmetric.IdleInTrx]
		if has != want || (detail != nil) != want {
			t.Errorf("%s: transactions read = %v (detail %v), want %v; values %v", step, has, detail != nil, want, values)
		}
		if want && values[mariadbmetric.IdleInTrx] < 1 {
			t.Errorf("%s: idle_in_trx = %v, want the open transaction", step, values[mariadbmetric.IdleInTrx])
		}
		if values[mariadbmetric.Connections] < 1 {
			t.Errorf("%s: connections = %v, want the idle session counted on every sample", step, values[mariadbmetric.Connections])
		}
	}
	// InnoDB serves INNODB_TRX from a snapshot refreshed only when nobody
	// read it for 100 ms, and the tests beside this one read it too: wait
	// until a read sees the transaction.
	sampleUntil(t, smp, func(values map[string]float64, _ any) bool {
		if values[mariadbmetric.IdleInTrx] >= 1 {
			return true
		}
		smp.lastTrx = time.Time{}
		return false
	})
	smp.lastTrx = time.Time{}
	withTrx("first sample", true)
	clock = clock.Add(200 * time.Millisecond)
	withTrx("200 ms later", false)
	clock = clock.Add(600 * time.Millisecond)
	withTrx("800 ms later", false)
	clock = clock.Add(200 * time.Millisecond)
	withTrx("a second later", true)
}
