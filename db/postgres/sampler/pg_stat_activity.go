package postgres

import (
	"context"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// activity samples pg_stat_activity: what sessions do right now, counted as
// Performance Insights does (average active sessions split by wait).
//
// Source "pg_stat_activity". Values (every sampler session left out, except
// in connections_total):
//
//	aas                      sessions  active now (state active or fastpath function call), client backends and autovacuum workers
//	wait.<type>:<event>      sessions  active sessions (as aas) per wait_event_type:wait_event, e.g. "wait.Lock:transactionid"
//	wait.CPU                 sessions  active sessions (as aas) with no wait event: on CPU, or in a wait PostgreSQL does not report
//	state.<state>            sessions  client backends per state, e.g. "state.idle in transaction"
//	app.<name>.sessions      sessions  client backends per application_name ("(none)" when empty; beyond 50 names, the rest as "(other)")
//	app.<name>.active        sessions  active client backends per application_name
//	connections              sessions  client backends
//	connections_total        sessions  client backends including the samplers': each takes a max_connections slot
//	autovacuum_workers       sessions  autovacuum workers running
//	oldest_xact_age_s        s         age of the oldest open transaction of a client backend (0 when none)
//	oldest_idle_in_xact_s    s         longest time a client backend has been idle in transaction (0 when none)
//	oldest_backend_xmin_age  xids      largest age(backend_xmin) of any backend (0 when none)
//
// Detail: the 5 sessions with the oldest open transactions
// ([]ActivitySession), oldest first; nil when no transaction is open.
type activity struct {
	session *session
}

var (
	_ sampler.Sampler   = (*activity)(nil)
	_ sampler.Momentary = (*activity)(nil)
)

// activityName is the source name.
const activityName = pgmetric.Activity

// maxApps bounds the app.* keys; more application names are summed as
// otherApp.
const maxApps = 50

// Stand-in application names.
const (
	unnamedApp = "(none)"
	otherApp   = "(other)"
)

// topSessions is how many sessions the detail lists.
const topSessions = 5

// activitySQL reads every session; the query text is sent only for the
// oldest transactions, which the detail shows.
var activitySQL = versioned{
	130000: Marker + `
SELECT a.pid, a.backend_type, coalesce(a.application_name, ''), coalesce(a.state, ''),
	coalesce(a.wait_event_type, ''), coalesce(a.wait_event, ''),
	extract(epoch FROM now() - a.xact_start)::float8,
	CASE WHEN a.state = 'idle in transaction' THEN extract(epoch FROM now() - a.state_change)::float8 END,
	age(a.backend_xmin)::float8, a.backend_xid::text,
	CASE WHEN a.counted AND a.xact_start IS NOT NULL
		AND row_number() OVER (ORDER BY a.counted DESC, a.xact_start NULLS LAST, a.pid) <= 5
		THEN left(a.query, 300) END,
	a.counted
FROM (SELECT a.*, (` + notSampler + `) AS counted FROM pg_stat_activity a) a`,
}

// ActivitySession is pgmetric.ActivitySession, named here too so existing callers compile.
type ActivitySession = pgmetric.ActivitySession

// activityRow is one row of activitySQL.
type activityRow struct {
	pid                          int
	backendType, app, state      string
	waitType, waitEvent          string
	xactAge, idleInXact, xminAge *float64
	backendXID, query            *string
	counted                      bool // not a sampler session
}

func (*activity) Name() string { return activityName }

// EveryTick: sessions and their waits change within a moment.
func (*activity) EveryTick() bool { return true }

func (smp *activity) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(activityName, activitySQL)
	if err != nil {
		return nil, nil, err
	}
	var rows []activityRow
	err = smp.session.query(ctx, "read "+activityName, sql, nil, func(r pgx.Rows) error {
		var row activityRow
		err := r.Scan(&row.pid, &row.backendType, &row.app, &row.state, &row.waitType, &row.waitEvent,
			&row.xactAge, &row.idleInXact, &row.xminAge, &row.backendXID, &row.query, &row.counted)
		rows = append(rows, row)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	values, detail := summarizeActivity(rows)
	if len(detail) == 0 {
		return values, nil, nil
	}
	return values, detail, nil
}

// summarizeActivity turns sessions into values and the detail.
func summarizeActivity(rows []activityRow) (map[string]float64, []ActivitySession) {
	values := map[string]float64{
		"aas": 0, "wait.CPU": 0, "connections": 0, "connections_total": 0, "autovacuum_workers": 0,
		"oldest_xact_age_s": 0, "oldest_idle_in_xact_s": 0, "oldest_backend_xmin_age": 0,
	}
	appSessions := map[string]float64{}
	appActive := map[string]float64{}
	var detail []ActivitySession
	for _, row := range rows {
		client := row.backendType == "client backend"
		if client {
			values[pgmetric.ConnectionsTotal]++
		}
		if !row.counted {
			continue
		}
		active := row.state == "active" || row.state == "fastpath function call"
		if (client || row.backendType == "autovacuum worker") && active {
			values[pgmetric.AAS]++
			values[pgmetric.Wait(row.wait(active))]++
		}
		if row.backendType == "autovacuum worker" {
			values[pgmetric.AutovacuumWorkers]++
		}
		if row.xminAge != nil {
			values[pgmetric.OldestBackendXminAge] = max(values[pgmetric.OldestBackendXminAge], *row.xminAge)
		}
		if client {
			values[pgmetric.Connections]++
			if row.state != "" {
				values[pgmetric.State(row.state)]++
			}
			app := row.app
			if app == "" {
				app = unnamedApp
			}
			appSessions[app]++
			if active {
				appActive[app]++
			}
			if row.xactAge != nil {
				values[pgmetric.OldestXactAgeS] = max(values[pgmetric.OldestXactAgeS], *row.xactAge)
			}
			if row.idleInXact != nil {
				values[pgmetric.OldestIdleInXactS] = max(values[pgmetric.OldestIdleInXactS], *row.idleInXact)
			}
		}
		if row.xactAge != nil && row.query != nil {
			session := ActivitySession{
				PID: row.pid, BackendType: row.backendType, ApplicationName: row.app, State: row.state,
				Wait: row.wait(active), XactAgeS: *row.xactAge, BackendXminAge: row.xminAge, Query: *row.query,
			}
			if row.backendXID != nil {
				session.BackendXID = *row.backendXID
			}
			detail = append(detail, session)
		}
	}
	for app, n := range capApps(appSessions) {
		values[pgmetric.AppSessions(app)] = n
	}
	for app, n := range capApps(appActive) {
		values[pgmetric.AppActive(app)] = n
	}
	sort.SliceStable(detail, func(i, j int) bool { return detail[i].XactAgeS > detail[j].XactAgeS })
	if len(detail) > topSessions {
		detail = detail[:topSessions]
	}
	return values, detail
}

// wait names what a session waits for, as the wait.* keys do.
func (row activityRow) wait(active bool) string {
	switch {
	case row.waitType != "":
		return row.waitType + ":" + row.waitEvent
	case active:
		return "CPU"
	default:
		return ""
	}
}

// capApps keeps the maxApps application names with the most sessions and
// sums the others as otherApp, so that a workload with a name per client
// does not make thousands of series.
func capApps(counts map[string]float64) map[string]float64 {
	if len(counts) <= maxApps {
		return counts
	}
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	capped := make(map[string]float64, maxApps)
	for i, name := range names {
		if i < maxApps-1 {
			capped[name] = counts[name]
		} else {
			capped[otherApp] += counts[name]
		}
	}
	return capped
}
