package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// databaseAges samples pg_database: how close the cluster is to transaction
// id and multixact id wraparound (what anti-wraparound vacuum, and in the
// end a forced shutdown, react to), and the size of the current database.
//
// Source "pg_database". Values:
//
//	datfrozenxid_age  xids     largest age(datfrozenxid) over all databases
//	mxid_age          mxids    largest mxid_age(datminmxid) over all databases
//	size_bytes        bytes    pg_database_size of the current database
//
// Detail: the databases with the largest ages (*DatabaseAges).
type databaseAges struct {
	session *session
}

var _ sampler.Sampler = (*databaseAges)(nil)

// databaseAgesName is the source name.
const databaseAgesName = pgmetric.Databases

// databaseAgesSQL reads the largest ages, with their databases.
var databaseAgesSQL = versioned{
	130000: Marker + `
SELECT x.datname, x.age, m.datname, m.age, pg_database_size(current_database())::float8
FROM (SELECT datname::text, age(datfrozenxid)::float8 AS age FROM pg_database ORDER BY 2 DESC LIMIT 1) x,
	(SELECT datname::text, mxid_age(datminmxid)::float8 AS age FROM pg_database ORDER BY 2 DESC LIMIT 1) m`,
}

// DatabaseAges is pgmetric.DatabaseAges, named here too so existing callers compile.
type DatabaseAges = pgmetric.DatabaseAges

func (*databaseAges) Name() string { return databaseAgesName }

func (smp *databaseAges) Sample(ctx context.Context) (map[string]float64, any, error) {
	sql, err := smp.session.pickSQL(databaseAgesName, databaseAgesSQL)
	if err != nil {
		return nil, nil, err
	}
	var ages DatabaseAges
	var size float64
	found := false
	err = smp.session.query(ctx, "read "+databaseAgesName, sql, nil, func(rows pgx.Rows) error {
		found = true
		return rows.Scan(&ages.OldestXidDatabase, &ages.DatfrozenxidAge, &ages.OldestMxidDatabase, &ages.MxidAge, &size)
	})
	if err != nil {
		return nil, nil, err
	}
	if !found {
		return map[string]float64{}, nil, nil
	}
	values := map[string]float64{
		"datfrozenxid_age": ages.DatfrozenxidAge,
		"mxid_age":         ages.MxidAge,
		"size_bytes":       size,
	}
	return values, &ages, nil
}
