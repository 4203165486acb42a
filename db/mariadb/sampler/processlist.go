package mariadb

import (
	"context"
	"database/sql"
	"sort"
	"time"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/sampler"
)

// processlist counts the sessions by what they are doing
// (information_schema.PROCESSLIST) on every tick of the run, and finds the
// oldest open transactions (INNODB_TRX) at most once a second.
//
// The two reads have different clocks because the states come in bursts
// (a queue on the query cache's lock forms and drains within a second, so
// one look a second sees too little of it), while InnoDB refreshes the
// snapshot behind INNODB_TRX only when nobody has read it for 100 ms: a
// join on every 100 ms tick would keep reading one frozen snapshot.
//
// Source "mariadb_processlist". Values (samplers left out), on every
// sample:
//
//	connections           sessions  client sessions
//	active                sessions  sessions running a command (not Sleep)
//	state.<state>         sessions  active sessions per state, e.g. "state.Waiting for query cache lock", "state.Sending data" ("(none)" when empty)
//	longest_query_s       s         longest running statement (0 when none)
//
// and on the samples that read the transactions (at most one a second):
//
//	idle_in_trx           sessions  sleeping sessions with an open InnoDB transaction
//	oldest_trx_age_s      s         age of the oldest open InnoDB transaction (0 when none)
//	oldest_idle_in_trx_s  s         longest sleep of a session with an open transaction (0 when none)
//
// Detail, on the samples that read the transactions: up to 5 sessions
// with the oldest open transactions, then the longest running statements
// ([]mariadbmetric.Session); nil when no session has either, and on the
// other samples.
type processlist struct {
	session *session
	now     func() time.Time // time.Now; tests move it
	lastTrx time.Time        // when INNODB_TRX was last read
}

// trxPeriod is how often the process list reads the transactions too,
// less half of the shortest tick (100 ms), so that a tick arriving a
// little early still reads them once a second.
const trxPeriod = time.Second - 50*time.Millisecond

var (
	_ sampler.Sampler   = (*processlist)(nil)
	_ sampler.Momentary = (*processlist)(nil)
)

const processlistName = mariadbmetric.Processlist

// maxSessions bounds the detail.
const maxSessions = 5

// processlistSQL lists the client sessions with their transactions.
// TIME_MS is MariaDB's; trx_started has whole seconds.
var processlistSQL = Marker + `
SELECT p.ID, coalesce(p.USER, ''), coalesce(p.DB, ''), coalesce(p.COMMAND, ''), coalesce(p.STATE, ''),
	coalesce(p.TIME_MS, 0) / 1000, coalesce(p.INFO, ''),
	coalesce(timestampdiff(SECOND, t.trx_started, now()), -1), coalesce(t.trx_state, '')
FROM information_schema.PROCESSLIST p
LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
WHERE ` + processlistWhere

// processlistOnlySQL is processlistSQL without the transactions, for the
// ticks between two reads of INNODB_TRX.
var processlistOnlySQL = Marker + `
SELECT p.ID, coalesce(p.USER, ''), coalesce(p.DB, ''), coalesce(p.COMMAND, ''), coalesce(p.STATE, ''),
	coalesce(p.TIME_MS, 0) / 1000, coalesce(p.INFO, ''), -1, ''
FROM information_schema.PROCESSLIST p
WHERE ` + processlistWhere

// processlistWhere leaves out the samplers, the server's own threads and
// replication senders.
const processlistWhere = notSampler + ` AND coalesce(p.COMMAND, '') NOT IN ('Daemon', 'Binlog Dump') AND coalesce(p.USER, '') NOT IN ('system user', 'event_scheduler')`

func (*processlist) Name() string { return processlistName }

// EveryTick: the process list's states are read on every tick of the
// run, down to 100 ms (a queue on the query cache's lock forms and drains
// within a second), the only MariaDB source that is. It reads INNODB_TRX
// at most once a second itself: InnoDB refreshes the snapshot behind
// information_schema.INNODB_TRX, INNODB_LOCKS and INNODB_LOCK_WAITS only
// when nobody has read it for 100 ms, so a source reading those tables
// every 100 ms would keep reading one frozen snapshot. The status
// counters are rates, and SHOW ENGINE INNODB STATUS is a page of text:
// once a second is enough.
func (*processlist) EveryTick() bool { return true }

func (smp *processlist) Sample(ctx context.Context) (map[string]float64, any, error) {
	now := time.Now
	if smp.now != nil {
		now = smp.now
	}
	withTrx := smp.lastTrx.IsZero() || now().Sub(smp.lastTrx) >= trxPeriod
	values := map[string]float64{mariadbmetric.Connections: 0, mariadbmetric.Active: 0, mariadbmetric.LongestQueryS: 0}
	text := processlistOnlySQL
	if withTrx {
		values[mariadbmetric.IdleInTrx], values[mariadbmetric.OldestTrxAgeS], values[mariadbmetric.OldestIdleInTrxS] = 0, 0, 0
		text = processlistSQL
	}
	var sessions []mariadbmetric.Session
	err := smp.session.query(ctx, "read "+processlistName, text, func(rows *sql.Rows) error {
		var s mariadbmetric.Session
		if err := rows.Scan(&s.ID, &s.User, &s.DB, &s.Command, &s.State, &s.TimeS, &s.Query, &s.TrxAgeS, &s.TrxState); err != nil {
			return err
		}
		s.Query = cut(s.Query, 300)
		values[mariadbmetric.Connections]++
		inTrx := s.TrxAgeS >= 0
		if !inTrx {
			s.TrxAgeS = 0
		} else {
			values[mariadbmetric.OldestTrxAgeS] = max(values[mariadbmetric.OldestTrxAgeS], s.TrxAgeS)
		}
		switch s.Command {
		case "Sleep":
			if inTrx {
				values[mariadbmetric.IdleInTrx]++
				values[mariadbmetric.OldestIdleInTrxS] = max(values[mariadbmetric.OldestIdleInTrxS], s.TimeS)
			}
		default:
			values[mariadbmetric.Active]++
			state := s.State
			if state == "" {
				state = "(none)"
			}
			values[mariadbmetric.State(state)]++
			if s.Command == "Query" || s.Command == "Execute" {
				values[mariadbmetric.LongestQueryS] = max(values[mariadbmetric.LongestQueryS], s.TimeS)
			}
		}
		if withTrx && (inTrx || (s.Command != "Sleep" && s.Query != "")) {
			sessions = append(sessions, s)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if withTrx {
		smp.lastTrx = now()
	}
	if len(sessions) == 0 {
		return values, nil, nil
	}
	sort.SliceStable(sessions, func(i, j int) bool {
		if sessions[i].TrxAgeS != sessions[j].TrxAgeS {
			return sessions[i].TrxAgeS > sessions[j].TrxAgeS
		}
		return sessions[i].TimeS > sessions[j].TimeS
	})
	if len(sessions) > maxSessions {
		sessions = sessions[:maxSessions]
	}
	return values, sessions, nil
}
