package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

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

var _ sampler.Sampler = (*locks)(nil)

// locksName is the source name.
const locksName = "locks"

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

// BlockingPair is a session waiting for a lock and a session it waits for.
type BlockingPair struct {
	BlockedPID    int     `json:"blocked_pid"`
	BlockedApp    string  `json:"blocked_app"`
	BlockedQuery  string  `json:"blocked_query"`
	WaitS         float64 `json:"wait_s"`
	LockType      string  `json:"locktype"`
	Mode          string  `json:"mode"`
	Relation      string  `json:"relation,omitempty"` // regclass text
	BlockingPID   int     `json:"blocking_pid"`       // 0: a prepared transaction
	BlockingApp   string  `json:"blocking_app"`
	BlockingState string  `json:"blocking_state"`
	BlockingQuery string  `json:"blocking_query"`
}

func (*locks) Name() string { return locksName }

func (smp *locks) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(locksName, locksSQL)
	if err != nil {
		return nil, nil, err
	}
	values := map[string]float64{"blocked": 0, "blocking_pairs": 0, "blockers": 0, "root_blockers": 0, "max_wait_s": 0}
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
			values["blocked"]++
			values["lock_waits."+p.LockType]++
			values["max_wait_s"] = max(values["max_wait_s"], p.WaitS)
		}
		if blockingPID == nil {
			return nil
		}
		p.BlockingPID = int(*blockingPID)
		blockers[p.BlockingPID] = true
		values["blocking_pairs"]++
		if len(pairs) < maxPairs {
			pairs = append(pairs, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	values["blockers"] = float64(len(blockers))
	for pid := range blockers {
		if !waiting[pid] {
			values["root_blockers"]++
		}
	}
	if len(pairs) == 0 {
		return values, nil, nil
	}
	return values, pairs, nil
}
