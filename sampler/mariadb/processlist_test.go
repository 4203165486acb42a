package mariadb

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend/mariadb/mariadbmetric"
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
