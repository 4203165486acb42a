package mariadb

import (
	"fmt"
	"testing"
	"time"
)

// TestSlowDiskSlowsCommits starts the server with the slow-disk library
// and commits one-row transactions with innodb_flush_log_at_trx_commit =
// 1: each waits for a redo-log fsync, so with every fsync 30 ms slower 10
// commits take at least 300 ms; switched off, they are fast again. It is
// what makes a commit-bound run reproducible on any machine.
func TestSlowDiskSlowsCommits(t *testing.T) {
	inst := startForTest(t, Options{SlowDisk: true, Settings: map[string]string{"innodb_flush_log_at_trx_commit": "1"}})
	if inst.SlowDisk() == "" {
		t.Fatal("no slow-disk control")
	}
	db := openDB(t, inst, "unix")
	db.SetMaxOpenConns(1)
	execSQL(t, db, "CREATE TABLE slow_commit (id INT PRIMARY KEY) ENGINE=InnoDB")
	commits := func(from int) time.Duration {
		start := time.Now()
		for i := from; i < from+10; i++ {
			execSQL(t, db, fmt.Sprintf("INSERT INTO slow_commit VALUES (%d)", i))
		}
		return time.Since(start)
	}
	const delay = 30 * time.Millisecond
	if err := inst.SlowDisk().On(delay); err != nil {
		t.Fatal(err)
	}
	slow := commits(0)
	if err := inst.SlowDisk().Off(); err != nil {
		t.Fatal(err)
	}
	fast := commits(10)
	if slow < 10*delay {
		t.Errorf("10 commits on the slow disk took %v, want at least %v: the redo log's fsync was not delayed", slow, 10*delay)
	}
	if fast >= slow/2 {
		t.Errorf("10 commits took %v with the slow disk off, %v on", fast, slow)
	}
}
