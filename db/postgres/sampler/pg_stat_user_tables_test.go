package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/firedrill/firedrill/sampler"
)

// TestUserTables scans, reads by index and updates a table between ticks
// and finds the counts under its name.
func TestUserTables(t *testing.T) {
	t.Parallel()
	set := newSet(t, server.ConnString(), Options{})
	smp := samplerOf(t, set, userTablesName)
	setup := openSession(t, server.ConnString(), "tables-setup")
	exec(t, setup, "DROP TABLE IF EXISTS tables_test; CREATE TABLE tables_test (id int PRIMARY KEY, v int); INSERT INTO tables_test SELECT g, 0 FROM generate_series(1, 1000) g")
	setup.Close(t.Context())
	sample(t, smp)

	work := openSession(t, server.ConnString(), "tables-work")
	exec(t, work, "UPDATE tables_test SET v = v + 1 WHERE id <= 100")
	exec(t, work, "SELECT count(*) FROM tables_test WHERE v = 0")
	exec(t, work, "SELECT v FROM tables_test WHERE id = 500")
	work.Close(t.Context())

	const table = "public.tables_test."
	sums := map[string]float64{}
	values, _ := sampleUntil(t, smp, func(values map[string]float64, _ any) bool {
		for _, key := range []string{"n_tup_upd", "seq_scan", "idx_scan"} {
			sums[key] += values[table+key]
		}
		return sums["n_tup_upd"] >= 100 && sums["seq_scan"] >= 1 && sums["idx_scan"] >= 1
	})
	for _, key := range []string{"n_live_tup", "n_dead_tup", "n_mod_since_analyze", "seq_tup_read", "autovacuum_count"} {
		if _, ok := values[table+key]; !ok {
			t.Errorf("%s%s missing from %v", table, key, values)
		}
	}
}

// TestBusiestTables ranks tables by activity in the interval, then dead
// rows, and leaves out idle tables.
func TestBusiestTables(t *testing.T) {
	t.Parallel()
	var counters sampler.Counters
	reading := func(rows map[string][2]float64) map[string]float64 {
		r := map[string]float64{}
		for table, row := range rows {
			r[table+".seq_tup_read"] = row[0]
			r[table+".n_dead_tup"] = row[1]
		}
		return r
	}
	start := time.Now()
	first := reading(map[string][2]float64{"s.busy_before": {1000, 0}, "s.idle": {0, 0}, "s.bloated": {0, 50}})
	iv := counters.Next(start, first)
	if got := fmt.Sprint(busiestTables([]string{"s.busy_before", "s.idle", "s.bloated"}, first, iv)); got != "[s.busy_before s.bloated]" {
		t.Errorf("first tick: %s, want activity since the reset, then dead rows, no idle table", got)
	}
	second := reading(map[string][2]float64{"s.busy_before": {1000, 0}, "s.idle": {0, 0}, "s.bloated": {0, 50}, "s.new": {10, 0}})
	iv = counters.Next(start.Add(time.Second), second)
	if got := fmt.Sprint(busiestTables([]string{"s.busy_before", "s.idle", "s.bloated", "s.new"}, second, iv)); got != "[s.new s.bloated]" {
		t.Errorf("second tick: %s, want the new table's activity, then dead rows", got)
	}
}
