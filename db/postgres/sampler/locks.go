package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// locks samples heavyweight lock waits and who causes them
// (pg_blocking_pids).
//
// Source "locks". Values (samplers left out):
//
//	blocked                sessions  sessions waiting for a heavyweight lock (wait_event_type Lock)
//	blocking_pairs         pairs     (waiting session, session it waits for) pairs from pg_blocking_pids
//	blockers               sessions  distinct sessions that others wait for (0 stands for prepared transactions)
//	root_blockers          sessions  blockers that do not wait for a lock themselves: the heads of the chains
//	max_wait_s             s         longest current lock wait (0 when none)
//	lock_waits.<locktype>  sessions  waiting sessions per lock type, e.g. "lock_waits.transactionid", "lock_waits.relation"
//
// Detail: up to 50 blocking pairs ([]BlockingPair), longest wait first; nil
// when none.
type locks struct {
	session *session
}

var (
	_ sampler.Sampler   = (*locks)(nil)
	_ sampler.Momentary = (*locks)(nil)
)

// locksName is the source name.
const locksName = pgmetric.Locks

// maxPairs bounds the detail.
const maxPairs = 50

// locksSQL lists every waiting session with each session it waits for
// (a row with NULL blocker when pg_blocking_pids no longer finds one).
// pg_locks.waitstart exists from PostgreSQL 14; before, the wait is timed
// from the start of the statement.
var locksSQL = versioned{
	130000: locksQuery("NULL::timestamptz"),
	140000: locksQuery("l.waitstart"),
}

// locksQuery builds locksSQL with the expression for when the wait started.
func locksQuery(waitStart string) string {
	return Marker + `
WITH waiting AS (
	SELECT a.pid, coalesce(a.application_name, '') AS application_name, coalesce(a.wait_event, '') AS locktype,
		left(a.query, 300) AS query, a.query_start
	FROM pg_stat_activity a
	WHERE a.wait_event_type = 'Lock' AND ` + notSampler + `
)
SELECT w.pid, w.application_name, w.locktype, w.query,
	greatest(extract(epoch FROM now() - coalesce(` + waitStart + `, w.query_start)), 0)::float8,
	coalesce(l.mode, ''), coalesce(l.relation::regclass::text, ''),
	bp.pid, coalesce(b.application_name, ''),
	CASE WHEN bp.pid = 0 THEN 'prepared transaction' ELSE coalesce(b.state, '') END,
	coalesce(left(b.query, 300), '')
FROM waiting w
LEFT JOIN LATERAL (
	SELECT l.mode, l.relation, ` + waitStart + ` AS waitstart FROM pg_locks l WHERE l.pid = w.pid AND NOT l.granted LIMIT 1
) l ON true
LEFT JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS bp(pid) ON true
LEFT JOIN pg_stat_activity b ON b.pid = bp.pid
ORDER BY 5 DESC, w.pid, bp.pid`
}

// BlockingPair is pgmetric.BlockingPair, named here too so existing callers compile.
type BlockingPair = pgmetric.BlockingPair

func (*locks) Name() string { return locksName }

// EveryTick: who blocks whom changes within a moment.
func (*locks) EveryTick() bool { return true }

func (smp *locks) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(locksName, locksSQL)
	if err != nil {
		return nil, nil, err
	}
	values := map[string]float64{pgmetric.LocksBlocked: 0, pgmetric.LocksBlockingPairs: 0, pgmetric.LocksBlockers: 0, pgmetric.LocksRootBlockers: 0, pgmetric.LocksMaxWaitS: 0}
	waiting := map[int]bool{}
	blockers := map[int]bool{}
	var pairs []BlockingPair
	err = smp.session.query(ctx, "read "+locksName, sql, nil, func(rows pgx.Rows) error {
		var p BlockingPair
		var blockingPID *int32
		if err := rows.Scan(&p.BlockedPID, &p.BlockedApp, &p.LockType, &p.BlockedQuery, &p.WaitS, &p.Mode, &p.Relation,
			&blockingPID, &p.BlockingApp, &p.BlockingState, &p.BlockingQuery); err != nil {
			return err
		}
		if !waiting[p.BlockedPID] {
			waiting[p.BlockedPID] = true
			values[pgmetric.LocksBlocked]++
			values[pgmetric.LockWaits(p.LockType)]++
			values[pgmetric.LocksMaxWaitS] = max(values[pgmetric.LocksMaxWaitS], p.WaitS)
		}
		if blockingPID == nil {
			return nil
		}
		p.BlockingPID = int(*blockingPID)
		blockers[p.BlockingPID] = true
		values[pgmetric.LocksBlockingPairs]++
		if len(pairs) < maxPairs {
			pairs = append(pairs, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	values[pgmetric.LocksBlockers] = float64(len(blockers))
	for pid := range blockers {
		if !waiting[pid] {
			values[pgmetric.LocksRootBlockers]++
		}
	}
	if len(pairs) == 0 {
		return values, nil, nil
	}
	return values, pairs, nil
}
