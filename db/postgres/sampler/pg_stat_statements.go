package postgres

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler"
)

// statements samples pg_stat_statements: which statements took the
// database's time in the interval. Only the current database's top-level
// statements are read, and the samplers' own (those carrying Marker) are
// left out.
//
// Source "pg_stat_statements". Values (omitted on the first tick):
//
//	calls_per_s    1/s    statement executions
//	exec_ms_per_s  ms/s   execution time: 1000 means one backend busy on average
//	rows_per_s     1/s    rows returned or affected
//	statements     count  distinct statements executed in the interval
//
// Detail: the 10 statements with the most execution time in the interval
// ([]Statement), most first, then up to 5 more of those that wrote
// temporary files (temp_blks_written), most blocks first: a sort that
// spills is often quick; nil when none ran.
type statements struct {
	session *session
	sql     string // statementsSQL for the installed extension, schema-qualified
	textSQL string // statementsTextSQL, schema-qualified

	prev   map[statementKey]statementCounters
	prevAt time.Time
	texts  map[int64]statementText // by queryid; read once per statement
}

var _ sampler.Sampler = (*statements)(nil)

// statementsName is the source name.
const statementsName = pgmetric.Statements

// topStatements is how many statements the detail lists by execution
// time; topSpilling how many more it may list for their temporary files.
const (
	topStatements = 10
	topSpilling   = 5
)

// maxTexts bounds the cache of statement texts (pg_stat_statements.max is
// 5000 by default).
const maxTexts = 20000

// statementsSQL reads the counters without texts, keyed by the version of
// the installed extension (1.8 → 10800) rather than of the server, since an
// extension may stay older than its server until ALTER EXTENSION … UPDATE.
// %s is the extension's schema. toplevel appeared in 1.9.
var statementsSQL = versioned{
	10800: Marker + `
SELECT s.userid::int8, s.queryid, s.calls::float8, s.total_exec_time::float8, s.rows::float8,
	s.shared_blks_hit::float8, s.shared_blks_read::float8, s.temp_blks_written::float8
FROM %s.pg_stat_statements(false) s
WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND s.queryid IS NOT NULL`,
	10900: Marker + `
SELECT s.userid::int8, s.queryid, s.calls::float8, s.total_exec_time::float8, s.rows::float8,
	s.shared_blks_hit::float8, s.shared_blks_read::float8, s.temp_blks_written::float8
FROM %s.pg_stat_statements(false) s
WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND s.queryid IS NOT NULL
	AND s.toplevel`,
}

// statementsTextSQL reads the texts of the statements $1; %s is the
// extension's schema.
const statementsTextSQL = Marker + `
SELECT DISTINCT ON (s.queryid) s.queryid, left(s.query, 500), position('` + Marker + `' in s.query) > 0
FROM %s.pg_stat_statements(true) s
WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND s.queryid = ANY($1)`

// Statement is pgmetric.Statement, named here too so existing callers compile.
type Statement = pgmetric.Statement

// statementKey is a pg_stat_statements entry in the current database.
type statementKey struct {
	userID  int64
	queryID int64
}

// statementCounters are an entry's cumulative counters.
type statementCounters struct {
	calls, totalMS, rows, blksHit, blksRead, tempWritten float64
}

// sub is c−d.
func (c statementCounters) sub(d statementCounters) statementCounters {
	return statementCounters{c.calls - d.calls, c.totalMS - d.totalMS, c.rows - d.rows,
		c.blksHit - d.blksHit, c.blksRead - d.blksRead, c.tempWritten - d.tempWritten}
}

// add is c+d.
func (c statementCounters) add(d statementCounters) statementCounters {
	return statementCounters{c.calls + d.calls, c.totalMS + d.totalMS, c.rows + d.rows,
		c.blksHit + d.blksHit, c.blksRead + d.blksRead, c.tempWritten + d.tempWritten}
}

// statementText is a statement's text and whether it is a sampler's.
type statementText struct {
	query string
	own   bool
}

// setupStatements finds pg_stat_statements, creating the extension when
// its library is preloaded and create allows it, and returns its sampler,
// or nil and a note saying why it cannot work here.
func setupStatements(ctx context.Context, s *session, preload string, create bool) (*statements, string) {
	preloaded := slices.ContainsFunc(strings.Split(preload, ","), func(lib string) bool {
		return trimLower(lib) == "pg_stat_statements"
	})
	schema, version, installed, err := findStatements(ctx, s)
	if err != nil {
		return nil, err.Error()
	}
	if !preloaded {
		if installed {
			return nil, "extension installed but its library is not loaded: add pg_stat_statements to shared_preload_libraries and restart"
		}
		return nil, "extension not installed; CREATE EXTENSION pg_stat_statements needs shared_preload_libraries = 'pg_stat_statements' (and a restart)"
	}
	if !installed && !create {
		return nil, "library loaded but the extension is not created in this database: CREATE EXTENSION pg_stat_statements (firedrill does not change a server it did not start)"
	}
	if !installed {
		err := s.query(ctx, "create extension pg_stat_statements",
			Marker+" CREATE EXTENSION IF NOT EXISTS pg_stat_statements", nil, func(pgx.Rows) error { return nil })
		if err != nil {
			return nil, fmt.Sprintf("extension not installed and could not be created: %v", err)
		}
		if schema, version, installed, err = findStatements(ctx, s); err != nil || !installed {
			return nil, fmt.Sprintf("extension created but not found: %v", err)
		}
	}
	sql, err := statementsSQL.pick(version)
	if err != nil {
		return nil, fmt.Sprintf("extension version %d.%d is older than 1.8: ALTER EXTENSION pg_stat_statements UPDATE",
			version/10000, version/100%100)
	}
	quoted := pgx.Identifier{schema}.Sanitize()
	smp := &statements{
		session: s,
		sql:     fmt.Sprintf(sql, quoted),
		textSQL: fmt.Sprintf(statementsTextSQL, quoted),
		texts:   map[int64]statementText{},
	}
	// A read now catches what the catalog does not tell (permissions, a
	// library that failed to load); the next one is the first tick's.
	if _, err := smp.read(ctx); err != nil {
		return nil, fmt.Sprintf("cannot be read: %v", err)
	}
	return smp, ""
}

// findStatements looks for the installed extension: its schema and its
// version as a number (1.10 → 11000).
func findStatements(ctx context.Context, s *session) (schema string, version int, installed bool, err error) {
	var extVersion string
	err = s.query(ctx, "look for pg_stat_statements", Marker+`
SELECT n.nspname::text, e.extversion
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'pg_stat_statements'`, nil, func(rows pgx.Rows) error {
		installed = true
		return rows.Scan(&schema, &extVersion)
	})
	if err != nil || !installed {
		return "", 0, false, err
	}
	major, minor, _ := strings.Cut(extVersion, ".")
	majorNum, err1 := strconv.Atoi(major)
	minorNum, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return "", 0, false, fmt.Errorf("extension version %q is not major.minor", extVersion)
	}
	return schema, majorNum*10000 + minorNum*100, true, nil
}

func (*statements) Name() string { return statementsName }

func (smp *statements) Sample(ctx context.Context) (map[string]float64, any, error) {
	reading, err := smp.read(ctx)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	prev, prevAt := smp.prev, smp.prevAt
	smp.prev, smp.prevAt = reading, now
	if prev == nil {
		return map[string]float64{}, nil, nil
	}
	seconds := now.Sub(prevAt).Seconds()

	// What each statement did in the interval, summed over users.
	byQuery := map[int64]statementCounters{}
	for key, cur := range reading {
		delta := cur
		if before, ok := prev[key]; ok && cur.calls >= before.calls {
			delta = cur.sub(before)
		} // else the entry is new (or was evicted and came back): all it counts is recent
		if delta.calls > 0 || delta.totalMS > 0 {
			byQuery[key.queryID] = byQuery[key.queryID].add(delta)
		}
	}
	if err := smp.readTexts(ctx, byQuery); err != nil {
		return nil, nil, err
	}
	smp.pruneTexts(reading)

	var total statementCounters
	var top []Statement
	for queryID, delta := range byQuery {
		text, known := smp.texts[queryID]
		if known && text.own {
			continue
		}
		total = total.add(delta)
		stmt := Statement{
			QueryID: queryID, Query: text.query, Calls: delta.calls, TotalMS: delta.totalMS, Rows: delta.rows,
			SharedBlksHit: delta.blksHit, SharedBlksRead: delta.blksRead, TempBlksWritten: delta.tempWritten,
		}
		if delta.calls > 0 {
			stmt.MeanMS = delta.totalMS / delta.calls
		}
		top = append(top, stmt)
	}
	values := map[string]float64{"statements": float64(len(top))}
	if seconds > 0 {
		values["calls_per_s"] = total.calls / seconds
		values["exec_ms_per_s"] = total.totalMS / seconds
		values["rows_per_s"] = total.rows / seconds
	}
	if len(top) == 0 {
		return values, nil, nil
	}
	sort.Slice(top, func(i, j int) bool {
		if top[i].TotalMS != top[j].TotalMS {
			return top[i].TotalMS > top[j].TotalMS
		}
		return top[i].QueryID < top[j].QueryID
	})
	if len(top) > topStatements {
		var spilling []Statement
		for _, st := range top[topStatements:] {
			if st.TempBlksWritten > 0 {
				spilling = append(spilling, st)
			}
		}
		sort.SliceStable(spilling, func(i, j int) bool { return spilling[i].TempBlksWritten > spilling[j].TempBlksWritten })
		top = append(slices.Clip(top[:topStatements]), spilling[:min(len(spilling), topSpilling)]...)
	}
	return values, top, nil
}

// read returns the current database's entries.
func (smp *statements) read(ctx context.Context) (map[statementKey]statementCounters, error) {
	reading := map[statementKey]statementCounters{}
	err := smp.session.query(ctx, "read "+statementsName, smp.sql, nil, func(rows pgx.Rows) error {
		var key statementKey
		var c statementCounters
		if err := rows.Scan(&key.userID, &key.queryID, &c.calls, &c.totalMS, &c.rows, &c.blksHit, &c.blksRead, &c.tempWritten); err != nil {
			return err
		}
		reading[key] = c
		return nil
	})
	return reading, err
}

// readTexts fetches the texts of the statements in byQuery not seen
// before: the text tells the samplers' own statements apart.
func (smp *statements) readTexts(ctx context.Context, byQuery map[int64]statementCounters) error {
	var missing []int64
	for queryID := range byQuery {
		if _, ok := smp.texts[queryID]; !ok {
			missing = append(missing, queryID)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return smp.session.query(ctx, "read "+statementsName+" texts", smp.textSQL, []any{missing}, func(rows pgx.Rows) error {
		var queryID int64
		var text statementText
		if err := rows.Scan(&queryID, &text.query, &text.own); err != nil {
			return err
		}
		smp.texts[queryID] = text
		return nil
	})
}

// pruneTexts forgets the texts of statements no longer in
// pg_stat_statements once the cache grows past maxTexts.
func (smp *statements) pruneTexts(reading map[statementKey]statementCounters) {
	if len(smp.texts) <= maxTexts {
		return
	}
	present := make(map[int64]bool, len(reading))
	for key := range reading {
		present[key.queryID] = true
	}
	for queryID := range smp.texts {
		if !present[queryID] {
			delete(smp.texts, queryID)
		}
	}
}
