package mariadbrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/timeline"
)

// autoIncLock finds transactions queued on a table's AUTO-INC lock
// (MariaDB/MySQL InnoDB). With innodb_autoinc_lock_mode = 1 a bulk insert
// (INSERT … SELECT, REPLACE … SELECT, LOAD DATA: the row count is unknown
// when it starts) holds that table lock until the statement ends, and
// every other insert into the table waits behind it; mode 2 hands out ids
// without the lock. It names the statement that holds the lock, why it is
// a bulk insert, and what mode 2 changes for replication.
type autoIncLock struct{}

var _ diagnose.Rule = autoIncLock{}

func (autoIncLock) ID() string { return "autoinc-lock-contention" }

// Inputs names the sources the rule reads.
func (autoIncLock) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{mariadbmetric.InnoDBLocks, mariadbmetric.InnoDBStatus},
		Also: []string{mariadbmetric.Processlist, mariadbmetric.GlobalStatus}}
}

// Thresholds: transactions waiting for an AUTO-INC lock on average.
const (
	autoIncMinWaiting  = 0.5 // something worth saying
	autoIncWarnWaiting = 2   // a queue: throughput is the lock's
)

func (autoIncLock) Check(run *timeline.Run) []diagnose.Finding {
	from, to := diagnose.LoadWindow(run)
	source, key := mariadbmetric.InnoDBLocks, mariadbmetric.LockWaits(mariadbmetric.LockAutoInc)
	waiting, peak, samples := meanPerSample(run, source, from, to, key)
	if samples == 0 { // no lock-wait view: the monitor's list
		source, key = mariadbmetric.InnoDBStatus, mariadbmetric.StatusAutoIncWaiting
		waiting, peak, samples = meanPerSample(run, source, from, to, key)
	}
	if samples < 3 || waiting < autoIncMinWaiting {
		return nil
	}
	active, _, _ := meanPerSample(run, mariadbmetric.Processlist, from, to, mariadbmetric.Active)
	holders, waiters, tables := statementCount{}, statementCount{}, statementCount{}
	first, last := math.Inf(1), math.Inf(-1)
	for _, s := range run.SourceSamples(mariadbmetric.InnoDBLocks) {
		if s.T < from || s.T >= to {
			continue
		}
		var pairs []mariadbmetric.BlockingPair
		if !diagnose.Detail(&s, &pairs) {
			continue
		}
		for _, p := range pairs {
			if p.Kind != mariadbmetric.LockAutoInc {
				continue
			}
			first, last = math.Min(first, s.T), math.Max(last, s.T)
			holders.add(p.BlockingQuery)
			waiters.add(p.BlockedQuery)
			tables[strings.ReplaceAll(p.Table, "`", "")]++
		}
	}
	if math.IsInf(first, 1) {
		first, last = from, to
	}
	holder, _ := holders.top()
	waiter, _ := waiters.top()
	table, _ := tables.top()
	if table == "" {
		table = "the table"
	}

	f := diagnose.Finding{Severity: diagnose.Warning, Start: math.Max(from, first-diagnose.Tick(run)), End: math.Max(first, math.Min(last, to)),
		References: []string{
			"https://dev.mysql.com/doc/refman/8.0/en/innodb-auto-increment-handling.html",
			"https://mariadb.com/kb/en/auto_increment-handling-in-innodb/",
			"https://mariadb.com/kb/en/innodb-system-variables/#innodb_autoinc_lock_mode",
		}}
	if waiting < autoIncWarnWaiting {
		f.Severity = diagnose.Info
	}
	if active > 0 && waiting >= autoIncWarnWaiting && waiting >= active/2 {
		f.Severity = diagnose.Critical
	}
	mode := autoIncSetting(run)
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(source, key), T: peak.T, Value: waiting,
		Text: fmt.Sprintf("%s transactions waiting for the AUTO-INC lock of %s on average, %s at the peak", diagnose.HumanNum(waiting), table, diagnose.HumanNum(peak.V))})
	if active > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.Active), Value: active,
			Text: fmt.Sprintf("of %s sessions running a statement on average: %s of them queue on one table lock", diagnose.HumanNum(active), diagnose.HumanPct(math.Min(1, waiting/active)))})
	}
	if holder != "" {
		why := "it inserts rows whose number InnoDB cannot know when the statement starts"
		if bulkInsert.MatchString(holder) {
			why = "INSERT … SELECT is a bulk insert: the number of rows is unknown until the SELECT has run, so mode 1 cannot reserve the ids up front and holds the table lock for the whole statement, the SELECT's scan included"
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, "blocking_query"),
			Text: fmt.Sprintf("the lock is held by `%s`: %s", diagnose.OneLine(holder, 160), why)})
	}
	if waiter != "" && waiter != holder {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, "blocked_query"),
			Text: fmt.Sprintf("waiting: `%s`", diagnose.OneLine(waiter, 160))})
	}
	if r := diagnose.Over(run.Series(mariadbmetric.GlobalStatus, mariadbmetric.ComInsertSelectPerS), from, to); r.N > 0 && r.Mean > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.ComInsertSelectPerS), Value: r.Mean,
			Text: fmt.Sprintf("%s INSERT … SELECT statements/s", diagnose.HumanNum(r.Mean))})
	}
	if mode != "" {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "settings:innodb_autoinc_lock_mode",
			Text: "innodb_autoinc_lock_mode = " + mode + ", transaction isolation " + strings.Join(isolations(run), ", ")})
	}
	if len(run.Manifest.Workloads) == 1 {
		f.Workload = run.Manifest.Workloads[0].Name
	}

	what := "inserts"
	if holder != "" && bulkInsert.MatchString(holder) {
		what = "INSERT … SELECT statements"
	}
	f.Headline = fmt.Sprintf("AUTO-INC table lock contention on %s: %s transactions wait for it on average (peak %s); %s hold it for their whole statement",
		table, diagnose.HumanNum(waiting), diagnose.HumanNum(peak.V), what)
	if mode != "" {
		f.Headline += " (innodb_autoinc_lock_mode = " + mode + ")"
	}
	f.Mechanism = "InnoDB hands out AUTO_INCREMENT values under a table-level AUTO-INC lock. With innodb_autoinc_lock_mode = 1 (consecutive), a simple INSERT … VALUES takes it only for the moment it reserves its ids, but a bulk insert (INSERT … SELECT, REPLACE … SELECT, LOAD DATA) keeps it until the statement ends, so that its ids are consecutive: " +
		"every insert into the table, from any session, queues behind it, and the statements serialise on one lock however many cores there are."
	if mode == "0" {
		f.Mechanism += " Mode 0 (traditional) holds it to the end of every insert statement, bulk or not."
	}
	f.Remedy = "Set innodb_autoinc_lock_mode = 2 (interleaved; the default from MySQL 8.0): ids come from a lightweight mutex per row, no statement holds a table lock, and concurrent inserts run in parallel. It is a startup option (my.cnf, then a restart). " +
		"What it changes: ids of concurrent bulk inserts interleave and may have gaps, and a statement-based binary log can no longer replay INSERT … SELECT with the same ids on a replica, so use binlog_format = ROW (or MIXED, which logs such statements as rows) before switching. " +
		"Or make the insert a simple one: `INSERT … VALUES` guarded by a UNIQUE key (`INSERT IGNORE` or `ON DUPLICATE KEY UPDATE`) instead of INSERT … SELECT … WHERE NOT EXISTS, which mode 1 serves without the table lock."
	return []diagnose.Finding{f}
}
