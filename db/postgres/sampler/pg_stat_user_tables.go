package postgres

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// userTables samples pg_stat_user_tables for the busiest tables: scans,
// row changes, dead rows and (auto)vacuum — where bloat and missing indexes
// show.
//
// Source "pg_stat_user_tables". Values, per table <T> ("<schema>.<table>"),
// for the 20 tables with the most activity in the interval (scans plus rows
// read, fetched, inserted, updated and deleted; ties and idle tables by
// dead rows; tables with neither are left out). On the first tick activity
// is counted since the statistics reset, and counters are omitted.
//
//	<T>.seq_scan               count  sequential scans in the interval
//	<T>.idx_scan               count  index scans in the interval
//	<T>.seq_tup_read           rows   rows read by sequential scans in the interval
//	<T>.idx_tup_fetch          rows   rows fetched by index scans in the interval
//	<T>.n_tup_ins              rows   rows inserted in the interval
//	<T>.n_tup_upd              rows   rows updated in the interval (HOT included)
//	<T>.n_tup_hot_upd          rows   rows HOT-updated in the interval
//	<T>.n_tup_del              rows   rows deleted in the interval
//	<T>.vacuum_count           count  manual vacuums in the interval
//	<T>.autovacuum_count       count  autovacuums in the interval
//	<T>.autoanalyze_count      count  autoanalyzes in the interval
//	<T>.n_live_tup             rows   estimated live rows now
//	<T>.n_dead_tup             rows   estimated dead rows now
//	<T>.n_mod_since_analyze    rows   rows changed since the last analyze
//	<T>.last_autovacuum_age_s  s      time since the last autovacuum ended; omitted if never
//
// Detail: nil.
type userTables struct {
	session  *session
	counters sampler.Counters
}

var _ sampler.Sampler = (*userTables)(nil)

// userTablesName is the source name.
const userTablesName = pgmetric.UserTables

// topTables is how many tables a sample reports.
const topTables = 20

// userTablesSQL reads the tables with the most activity since the
// statistics reset; the limit keeps the read cheap on schemas with very
// many tables (a table that only just became busy among them may be missed).
var userTablesSQL = versioned{
	130000: Marker + `
SELECT schemaname || '.' || relname, seq_scan::float8, coalesce(idx_scan, 0)::float8,
	seq_tup_read::float8, coalesce(idx_tup_fetch, 0)::float8,
	n_tup_ins::float8, n_tup_upd::float8, n_tup_hot_upd::float8, n_tup_del::float8,
	vacuum_count::float8, autovacuum_count::float8, autoanalyze_count::float8,
	n_live_tup::float8, n_dead_tup::float8, n_mod_since_analyze::float8,
	extract(epoch FROM now() - last_autovacuum)::float8
FROM pg_stat_user_tables
ORDER BY seq_scan + coalesce(idx_scan, 0) + seq_tup_read + coalesce(idx_tup_fetch, 0)
	+ n_tup_ins + n_tup_upd + n_tup_del + n_dead_tup DESC
LIMIT 1000`,
}

// userTablesColumns are userTablesSQL's numeric columns before the last
// autovacuum age, in order.
var userTablesColumns = []string{
	"seq_scan", "idx_scan", "seq_tup_read", "idx_tup_fetch",
	"n_tup_ins", "n_tup_upd", "n_tup_hot_upd", "n_tup_del",
	"vacuum_count", "autovacuum_count", "autoanalyze_count",
	"n_live_tup", "n_dead_tup", "n_mod_since_analyze",
}

// activityColumns are the counters whose growth ranks tables.
var activityColumns = []string{"seq_scan", "idx_scan", "seq_tup_read", "idx_tup_fetch", "n_tup_ins", "n_tup_upd", "n_tup_del"}

// userTablesSeries maps columns to values (keys are prefixed "<T>.").
var userTablesSeries = []series{
	{"seq_scan", "seq_scan", perInterval},
	{"idx_scan", "idx_scan", perInterval},
	{"seq_tup_read", "seq_tup_read", perInterval},
	{"idx_tup_fetch", "idx_tup_fetch", perInterval},
	{"n_tup_ins", "n_tup_ins", perInterval},
	{"n_tup_upd", "n_tup_upd", perInterval},
	{"n_tup_hot_upd", "n_tup_hot_upd", perInterval},
	{"n_tup_del", "n_tup_del", perInterval},
	{"vacuum_count", "vacuum_count", perInterval},
	{"autovacuum_count", "autovacuum_count", perInterval},
	{"autoanalyze_count", "autoanalyze_count", perInterval},
	{"n_live_tup", "n_live_tup", gauge},
	{"n_dead_tup", "n_dead_tup", gauge},
	{"n_mod_since_analyze", "n_mod_since_analyze", gauge},
}

func (*userTables) Name() string { return userTablesName }

func (smp *userTables) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(userTablesName, userTablesSQL)
	if err != nil {
		return nil, nil, err
	}
	reading := map[string]float64{}
	lastAutovacuum := map[string]float64{}
	var tables []string
	err = smp.session.query(ctx, "read "+userTablesName, sql, nil, func(rows pgx.Rows) error {
		var name string
		counts := make([]float64, len(userTablesColumns))
		var autovacuumAge *float64
		targets := []any{&name}
		for i := range counts {
			targets = append(targets, &counts[i])
		}
		if err := rows.Scan(append(targets, &autovacuumAge)...); err != nil {
			return err
		}
		tables = append(tables, name)
		for i, column := range userTablesColumns {
			reading[name+"."+column] = counts[i]
		}
		if autovacuumAge != nil {
			lastAutovacuum[name] = *autovacuumAge
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	iv := smp.counters.Next(time.Now(), reading)
	values := map[string]float64{}
	for _, table := range busiestTables(tables, reading, iv) {
		prefix := table + "."
		emitSeries(values, userTablesSeries, prefix, reading, iv)
		if age, ok := lastAutovacuum[table]; ok {
			values[prefix+"last_autovacuum_age_s"] = age
		}
	}
	return values, nil, nil
}

// busiestTables returns the topTables tables with the most activity in
// the interval (since the reset on the first tick), then the most dead
// rows; tables with neither are left out.
func busiestTables(tables []string, reading map[string]float64, iv sampler.Interval) []string {
	type ranked struct {
		name              string
		activity, deadTup float64
	}
	var candidates []ranked
	for _, table := range tables {
		r := ranked{name: table, deadTup: reading[table+".n_dead_tup"]}
		for _, column := range activityColumns {
			key := table + "." + column
			if iv.Seconds == 0 {
				r.activity += reading[key]
			} else if delta, ok := iv.Delta(key); ok {
				r.activity += delta
			} else {
				// New since the last tick, or its counters were reset:
				// everything it counts happened since.
				r.activity += reading[key]
			}
		}
		if r.activity > 0 || r.deadTup > 0 {
			candidates = append(candidates, r)
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.activity != b.activity {
			return a.activity > b.activity
		}
		if a.deadTup != b.deadTup {
			return a.deadTup > b.deadTup
		}
		return a.name < b.name
	})
	if len(candidates) > topTables {
		candidates = candidates[:topTables]
	}
	names := make([]string, len(candidates))
	for i, c := range candidates {
		names[i] = c.name
	}
	return names
}
