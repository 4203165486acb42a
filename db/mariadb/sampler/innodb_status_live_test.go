package mariadb

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
)

// TestDeadlockSeen makes two transactions update two rows in opposite
// orders: InnoDB rolls one back with 1213, the monitor's latest deadlock
// is reported once as new with both statements and their record locks,
// and SHOW GLOBAL STATUS counts it.
func TestDeadlockSeen(t *testing.T) {
	set := newSet(t)
	status := samplerOf(t, set, innodbStatusName)
	counters := samplerOf(t, set, globalStatusName)
	a, b := openSession(t), openSession(t)
	exec(t, a, "CREATE TABLE dl_test (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", "INSERT INTO dl_test VALUES (1, 0), (2, 0)")
	t.Cleanup(func() { exec(t, a, "DROP TABLE dl_test") })
	before, _ := sample(t, status)
	if before[mariadbmetric.StatusDeadlockNew] != 0 {
		t.Errorf("first reading says a new deadlock: %v", before)
	}
	sample(t, counters)

	exec(t, a, "BEGIN", "UPDATE dl_test SET v = 1 WHERE id = 1")
	exec(t, b, "BEGIN", "UPDATE dl_test SET v = 2 WHERE id = 2")
	first := background(a, "UPDATE dl_test SET v = 1 WHERE id = 2")
	sampleUntil(t, samplerOf(t, set, innodbLocksName), func(values map[string]float64, _ any) bool {
		return values[mariadbmetric.LocksBlocked] >= 1
	})
	_, errB := b.ExecContext(t.Context(), "UPDATE dl_test SET v = 2 WHERE id = 1")
	errA := <-first
	var me *mysql.MySQLError
	victims := 0
	for _, err := range []error{errA, errB} {
		if err == nil {
			continue
		}
		if !errors.As(err, &me) || me.Number != 1213 {
			t.Fatalf("want a deadlock (1213), got %v", err)
		}
		victims++
	}
	if victims != 1 {
		t.Fatalf("errors %v, %v: want one deadlock victim", errA, errB)
	}
	exec(t, a, "ROLLBACK")
	exec(t, b, "ROLLBACK")

	values, detail := sample(t, status)
	d, _ := detail.(mariadbmetric.InnoDBStatusDetail)
	if values[mariadbmetric.StatusDeadlockNew] != 1 || d.Deadlock == nil || len(d.Deadlock.Transactions) != 2 {
		t.Fatalf("values %v, detail %+v: want the new deadlock", values, detail)
	}
	for _, trx := range d.Deadlock.Transactions {
		if !strings.HasPrefix(trx.Query, "UPDATE dl_test SET") || trx.Waiting == nil || trx.Waiting.Gap() ||
			trx.Waiting.Index != "PRIMARY" || !strings.HasSuffix(trx.Waiting.Table, "dl_test") {
			t.Errorf("transaction %+v waits for %+v: want a record lock of dl_test's PRIMARY", trx, trx.Waiting)
		}
	}
	again, detail := sample(t, status)
	if again[mariadbmetric.StatusDeadlockNew] != 0 || detail != nil {
		t.Errorf("the same deadlock reported twice: %v %+v", again, detail)
	}
	counted, _ := sample(t, counters)
	if counted[mariadbmetric.Deadlocks] < 1 || counted[mariadbmetric.RowLockWaitsPerS] <= 0 {
		t.Errorf("global status after the deadlock: %v", counted)
	}
}
