package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/sampler"
)

// innodbLocks samples who waits for which InnoDB lock, held by whom
// (information_schema.INNODB_LOCK_WAITS, INNODB_LOCKS and INNODB_TRX,
// MariaDB 10.11): the lock's type and mode tell an AUTO-INC table lock
// from a row or a gap.
//
// Source "mariadb_innodb_locks". Values (samplers left out):
//
//	blocked             sessions  transactions waiting for an InnoDB lock
//	blocking_pairs      pairs     (waiting transaction, transaction it waits for) pairs
//	blockers            sessions  distinct transactions that others wait for
//	root_blockers       sessions  blockers that do not wait for a lock themselves: the heads of the chains
//	max_wait_s          s         longest current lock wait (0 when none)
//	lock_waits.<kind>   sessions  waiting transactions per kind of lock: auto_inc (the table's AUTO-INC lock), table (another table lock), record (a row, or a row and the gap before it), gap (a gap only, or the supremum)
//	transactions        count     open InnoDB transactions
//
// Detail: up to 50 blocking pairs ([]mariadbmetric.BlockingPair), longest
// wait first; nil when none. With performance_schema on, a blocker that
// runs no statement gets its last one (BlockingLastQuery), read only
// while some transaction waits on it.
type innodbLocks struct {
	session *session
	// lastStatements: performance_schema is on, so the statements of an
	// idle blocker can be read.
	lastStatements bool
}

var _ sampler.Sampler = (*innodbLocks)(nil)

const innodbLocksName = mariadbmetric.InnoDBLocks

// maxPairs bounds the detail. A queue on one AUTO-INC lock makes every
// waiter wait for every transaction ahead of it: n waiters, n²/2 pairs.
const maxPairs = 50

// innodbLocksSQL lists every (waiting, blocking) pair with the lock asked
// for, longest wait first, then the count of open transactions as a row
// with a NULL lock (the samplers' own left out: they run no InnoDB
// transaction, but a statement of theirs might show in trx_query).
var innodbLocksSQL = Marker + `
SELECT r.trx_mysql_thread_id, r.trx_id, coalesce(r.trx_query, ''),
	greatest(coalesce(timestampdiff(SECOND, r.trx_wait_started, now()), 0), 0),
	l.lock_type, l.lock_mode, coalesce(l.lock_table, ''), coalesce(l.lock_index, ''), coalesce(l.lock_data, ''),
	b.trx_mysql_thread_id, b.trx_id, coalesce(b.trx_state, ''), coalesce(b.trx_operation_state, ''), coalesce(b.trx_query, '')
FROM information_schema.INNODB_LOCK_WAITS w
JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.requested_lock_id
JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
UNION ALL
SELECT -1, '', '', count(*), NULL, NULL, '', '', '', -1, '', '', '', ''
FROM information_schema.INNODB_TRX t
WHERE t.trx_mysql_thread_id <> CONNECTION_ID() AND coalesce(t.trx_query, '') NOT LIKE '/* firedrill-sampler */%'
ORDER BY 4 DESC`

// lastStatementSQL finds the last statement of each of the threads
// (processlist ids) listed in its %s: the current (or just finished)
// statement of each, then its history, newest first.
const lastStatementSQL = Marker + `
SELECT t.PROCESSLIST_ID, s.SQL_TEXT
FROM performance_schema.threads t
JOIN (SELECT THREAD_ID, EVENT_ID, SQL_TEXT FROM performance_schema.events_statements_current
	UNION ALL
	SELECT THREAD_ID, EVENT_ID, SQL_TEXT FROM performance_schema.events_statements_history) s ON s.THREAD_ID = t.THREAD_ID
WHERE t.PROCESSLIST_ID IN (%s) AND s.SQL_TEXT IS NOT NULL AND s.SQL_TEXT <> ''
ORDER BY t.PROCESSLIST_ID, s.EVENT_ID DESC`

func (*innodbLocks) Name() string { return innodbLocksName }

func (smp *innodbLocks) Sample(ctx context.Context) (map[string]float64, any, error) {
	values := map[string]float64{
		mariadbmetric.LocksBlocked: 0, mariadbmetric.LocksBlockingPairs: 0, mariadbmetric.LocksBlockers: 0,
		mariadbmetric.LocksRootBlockers: 0, mariadbmetric.LocksMaxWaitS: 0, mariadbmetric.Transactions: 0,
	}
	waiting := map[string]bool{}
	blockers := map[string]bool{}
	var pairs []mariadbmetric.BlockingPair
	err := smp.session.query(ctx, "read "+innodbLocksName, innodbLocksSQL, func(rows *sql.Rows) error {
		var p mariadbmetric.BlockingPair
		var lockType, lockMode sql.NullString
		var lockData string
		if err := rows.Scan(&p.BlockedID, &p.BlockedTrx, &p.BlockedQuery, &p.WaitS, &lockType, &lockMode, &p.Table, &p.Index, &lockData,
			&p.BlockingID, &p.BlockingTrx, &p.BlockingState, &p.BlockingOperation, &p.BlockingQuery); err != nil {
			return err
		}
		if !lockType.Valid { // the count of open transactions
			values[mariadbmetric.Transactions] = p.WaitS
			return nil
		}
		p.LockType, p.LockMode = lockType.String, lockMode.String
		p.Kind = LockKind(p.LockType, p.LockMode, lockData)
		p.LockData = cut(lockData, 100)
		if !waiting[p.BlockedTrx] {
			waiting[p.BlockedTrx] = true
			values[mariadbmetric.LocksBlocked]++
			values[mariadbmetric.LockWaits(p.Kind)]++
			values[mariadbmetric.LocksMaxWaitS] = max(values[mariadbmetric.LocksMaxWaitS], p.WaitS)
		}
		blockers[p.BlockingTrx] = true
		values[mariadbmetric.LocksBlockingPairs]++
		if len(pairs) < maxPairs {
			p.BlockedQuery, p.BlockingQuery = cut(p.BlockedQuery, 300), cut(p.BlockingQuery, 300)
			pairs = append(pairs, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	values[mariadbmetric.LocksBlockers] = float64(len(blockers))
	for trx := range blockers {
		if !waiting[trx] {
			values[mariadbmetric.LocksRootBlockers]++
		}
	}
	if len(pairs) == 0 {
		return values, nil, nil
	}
	if smp.lastStatements {
		if err := smp.readLastStatements(ctx, pairs); err != nil {
			return nil, nil, err
		}
	}
	return values, pairs, nil
}

// readLastStatements fills in the last statement of each blocker that
// runs none.
func (smp *innodbLocks) readLastStatements(ctx context.Context, pairs []mariadbmetric.BlockingPair) error {
	var ids []string
	seen := map[int64]bool{}
	for _, p := range pairs {
		if strings.TrimSpace(p.BlockingQuery) == "" && p.BlockingID > 0 && !seen[p.BlockingID] {
			seen[p.BlockingID] = true
			ids = append(ids, strconv.FormatInt(p.BlockingID, 10))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	last := map[int64]string{}
	err := smp.session.query(ctx, "read the idle blockers' last statements", fmt.Sprintf(lastStatementSQL, strings.Join(ids, ", ")), func(rows *sql.Rows) error {
		var id int64
		var text string
		if err := rows.Scan(&id, &text); err != nil {
			return err
		}
		if _, ok := last[id]; !ok && !strings.HasPrefix(text, Marker) {
			last[id] = text
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range pairs {
		if q, ok := last[pairs[i].BlockingID]; ok && strings.TrimSpace(pairs[i].BlockingQuery) == "" {
			pairs[i].BlockingLastQuery = cut(q, 300)
		}
	}
	return nil
}

// LockKind classifies a lock as INNODB_LOCKS shows it (lock_type,
// lock_mode, lock_data) into the kinds of mariadbmetric.LockKinds. MariaDB
// shows a gap lock's mode with ",GAP" and a lock on the page's supremum
// with lock_data "supremum pseudo-record" (the gap after the last
// record); it does not tell a record lock from a next-key lock or an
// insert intention, so those are all "record".
func LockKind(lockType, lockMode, lockData string) string {
	switch {
	case strings.EqualFold(lockType, "TABLE") && strings.Contains(strings.ToUpper(lockMode), "AUTO"):
		return mariadbmetric.LockAutoInc
	case strings.EqualFold(lockType, "TABLE"):
		return mariadbmetric.LockTable
	case strings.Contains(strings.ToUpper(lockMode), "GAP"), strings.Contains(lockData, "supremum"):
		return mariadbmetric.LockGap
	}
	return mariadbmetric.LockRecord
}
