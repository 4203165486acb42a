package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// xminHorizon samples what holds back the xmin horizon, the oldest
// transaction whose snapshot vacuum must respect: while it stays put, no
// dead row version newer than it can be removed anywhere.
//
// Source "xmin_horizon". Values, ages in transaction ids (age(xid)), 0 when
// nothing of that kind holds the horizon:
//
//	age           xids  the oldest of backend_age, prepared_age and slot_age
//	backend_age   xids  oldest backend_xmin or backend_xid of a session (autovacuum workers and samplers left out)
//	prepared_age  xids  oldest prepared transaction (pg_prepared_xacts)
//	slot_age      xids  oldest xmin or catalog_xmin of a replication slot
//
// Detail: the holder of the oldest horizon (*XminHolder), or nil when none.
type xminHorizon struct {
	session *session
}

var (
	_ sampler.Sampler   = (*xminHorizon)(nil)
	_ sampler.Momentary = (*xminHorizon)(nil)
)

// xminHorizonName is the source name.
const xminHorizonName = pgmetric.XminHorizon

// xminHorizonSQL returns the oldest holder of each kind. Lazy vacuum's
// snapshot does not hold back the horizon of other vacuums, so autovacuum
// workers are left out.
var xminHorizonSQL = versioned{
	130000: Marker + `
WITH holders AS (
	SELECT 'backend' AS kind, a.pid, a.application_name, a.state, a.backend_type,
		extract(epoch FROM now() - a.xact_start)::float8 AS xact_age_s,
		left(a.query, 300) AS query, NULL::text AS gid, NULL::text AS slot_name,
		greatest(age(a.backend_xmin), age(a.backend_xid))::float8 AS age,
		-- Every snapshot taken while a transaction with an xid is open has
		-- that xid as its xmin: the sessions tie on age, and the holder is
		-- the one whose own xid it is (then the oldest transaction).
		coalesce(age(a.backend_xid) >= age(a.backend_xmin), a.backend_xid IS NOT NULL) AS owns
	FROM pg_stat_activity a
	WHERE (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
		AND a.backend_type <> 'autovacuum worker'
		AND ` + notSampler + `
	UNION ALL
	SELECT 'prepared', NULL, NULL, NULL, NULL,
		extract(epoch FROM now() - p.prepared)::float8, NULL, p.gid, NULL,
		age(p.transaction)::float8, true
	FROM pg_prepared_xacts p
	UNION ALL
	SELECT 'slot', s.active_pid, NULL, CASE WHEN s.active THEN 'active' ELSE 'inactive' END, NULL,
		NULL, NULL, NULL, s.slot_name::text,
		greatest(age(s.xmin), age(s.catalog_xmin))::float8, true
	FROM pg_replication_slots s
	WHERE s.xmin IS NOT NULL OR s.catalog_xmin IS NOT NULL
)
SELECT DISTINCT ON (kind) kind, pid, application_name, state, backend_type, xact_age_s, query, gid, slot_name, age
FROM holders
ORDER BY kind, age DESC, owns DESC, xact_age_s DESC NULLS LAST`,
}

// XminHolder is pgmetric.XminHolder, named here too so existing callers compile.
type XminHolder = pgmetric.XminHolder

// ageKeys maps a holder's kind to its value key.
var ageKeys = map[string]string{"backend": pgmetric.HorizonBackendAge, "prepared": pgmetric.HorizonPreparedAge, "slot": pgmetric.HorizonSlotAge}

func (*xminHorizon) Name() string { return xminHorizonName }

// EveryTick: the horizon's holder can come and go within a moment.
func (*xminHorizon) EveryTick() bool { return true }

func (smp *xminHorizon) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(xminHorizonName, xminHorizonSQL)
	if err != nil {
		return nil, nil, err
	}
	values := map[string]float64{"age": 0, "backend_age": 0, "prepared_age": 0, "slot_age": 0}
	var holder *XminHolder
	err = smp.session.query(ctx, "read "+xminHorizonName, sql, nil, func(rows pgx.Rows) error {
		var h XminHolder
		var pid *int32
		var app, state, backendType, query, gid, slot *string
		var age *float64
		if err := rows.Scan(&h.Kind, &pid, &app, &state, &backendType, &h.XactAgeS, &query, &gid, &slot, &age); err != nil {
			return err
		}
		if age == nil { // the xid is older than age() can tell, or went away meanwhile
			return nil
		}
		h.Age = *age
		if pid != nil {
			h.PID = int(*pid)
		}
		h.ApplicationName, h.State, h.BackendType = deref(app), deref(state), deref(backendType)
		h.Query, h.GID, h.SlotName = deref(query), deref(gid), deref(slot)
		values[ageKeys[h.Kind]] = h.Age
		if holder == nil || h.Age > holder.Age {
			holder = &h
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if holder != nil {
		values[pgmetric.HorizonAge] = holder.Age
		return values, holder, nil
	}
	return values, nil, nil
}

// deref is a nullable text column's value, "" for NULL.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
