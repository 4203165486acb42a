package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	pgsampler "github.com/firedrill/firedrill/db/postgres/sampler"
	"github.com/firedrill/firedrill/timeline"
)

// FunctionsSource is the timeline source of the function bodies read at
// the end of a run (CaptureFunctions).
//
// Values:
//
//	functions  count  functions whose bodies were read
//
// Detail: []pgmetric.Function, by schema and name.
const FunctionsSource = pgmetric.Functions

// Bounds of CaptureFunctions: calls are followed this many levels deep
// (script → function → function …), and at most maxFunctions are read.
const (
	functionDepth = 4
	maxFunctions  = 50
)

// functionCall finds the names a text may call: an identifier, possibly
// schema-qualified, followed by "(".
var functionCall = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_$]*)\s*\(`)

// calledNames adds to names the lower-case names text may call; SQL's
// own words that take parentheses (VALUES (, IN (, count( …) are asked
// for too and simply not found among the user's functions.
func calledNames(names map[string]bool, text string) {
	for _, m := range functionCall.FindAllStringSubmatch(text, -1) {
		names[strings.ToLower(m[1])] = true
	}
}

// functionsSQL reads the SQL and PL/pgSQL functions named $1, leaving out
// the system's and the extensions' own.
const functionsSQL = pgsampler.Marker + `
SELECT n.nspname::text, p.proname::text, pg_get_function_identity_arguments(p.oid), l.lanname::text,
	left(p.prosrc, $2)
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
JOIN pg_language l ON l.oid = p.prolang
WHERE p.proname = ANY($1)
	AND l.lanname IN ('plpgsql', 'sql')
	AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'
	AND ($3 = '' OR n.nspname = $3)
	AND NOT EXISTS (SELECT 1 FROM pg_depend d
		WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
ORDER BY 1, 2, 3`

// CaptureFunctions reads the bodies of the SQL and PL/pgSQL functions that
// texts (the workloads' script commands) call, and of the functions those
// call in turn, so that the rules can see what a `SELECT f(…)` does:
// its row locks, its writes, its EXCEPTION blocks. Call it after the load,
// while the server still runs; the sample's T is left for the caller.
// Functions are matched by name only: an overloaded name brings every
// overload.
func CaptureFunctions(ctx context.Context, connString string, names map[string]bool) (timeline.Sample, error) {
	return captureFunctions(ctx, connString, names, "", "")
}

// captureFunctions is CaptureFunctions with the workloads' search_path,
// reading only schema's functions unless schema is "".
func captureFunctions(ctx context.Context, connString string, names map[string]bool, searchPath, schema string) (timeline.Sample, error) {
	smp := timeline.Sample{Source: FunctionsSource}
	t0 := time.Now()
	defer func() { smp.Duration = float64(time.Since(t0).Microseconds()) / 1000 }()
	fail := func(err error) (timeline.Sample, error) {
		err = fmt.Errorf("read the scripts' functions: %w", err)
		smp.Error = err.Error()
		return smp, err
	}
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return fail(err)
	}
	cfg.RuntimeParams["application_name"] = explainAppName
	if searchPath != "" {
		cfg.RuntimeParams["search_path"] = searchPath
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fail(fmt.Errorf("connect: %w", err))
	}
	defer conn.Close(context.WithoutCancel(ctx))

	var found []pgmetric.Function
	asked := map[string]bool{}
	next := names
	for depth := 0; depth < functionDepth && len(next) > 0 && len(found) < maxFunctions; depth++ {
		var ask []string
		for n := range next {
			if !asked[n] {
				asked[n] = true
				ask = append(ask, n)
			}
		}
		if len(ask) == 0 {
			break
		}
		slices.Sort(ask)
		fns, err := readFunctions(ctx, conn, ask, schema)
		if err != nil {
			return fail(err)
		}
		next = map[string]bool{}
		for _, f := range fns {
			if len(found) == maxFunctions {
				break
			}
			found = append(found, f)
			calledNames(next, f.Body)
		}
	}
	smp.Values = map[string]float64{pgmetric.FunctionsRead: float64(len(found))}
	if len(found) > 0 {
		b, err := json.Marshal(found)
		if err != nil {
			return fail(fmt.Errorf("encode functions: %w", err))
		}
		smp.Detail = b
	}
	return smp, nil
}

// readFunctions reads the functions named names (in schema, unless "").
func readFunctions(ctx context.Context, conn *pgx.Conn, names []string, schema string) ([]pgmetric.Function, error) {
	ctx, cancel := context.WithTimeout(ctx, explainStatementTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, functionsSQL, names, pgmetric.FunctionBodyMax, schema)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pgmetric.Function
	for rows.Next() {
		var f pgmetric.Function
		if err := rows.Scan(&f.Schema, &f.Name, &f.Args, &f.Language, &f.Body); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// ForeignKeysSource is the timeline source of the foreign keys read at
// the end of a run (part of Evidence).
//
// Values:
//
//	foreign_keys  count  foreign keys read
//
// Detail: []pgmetric.ForeignKey, by table and name.
const ForeignKeysSource = pgmetric.ForeignKeys

// maxForeignKeys bounds the foreign keys read.
const maxForeignKeys = 200

// foreignKeysSQL reads the foreign keys of the user's tables.
const foreignKeysSQL = pgsampler.Marker + `
SELECT c.conname::text, n.nspname::text, t.relname::text,
	ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(num, i)
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.num ORDER BY k.i),
	rn.nspname::text, r.relname::text,
	ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(num, i)
		JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.num ORDER BY k.i)
FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
JOIN pg_class r ON r.oid = c.confrelid JOIN pg_namespace rn ON rn.oid = r.relnamespace
WHERE c.contype = 'f' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
	AND ($2 = '' OR n.nspname = $2)
ORDER BY 2, 3, 1
LIMIT $1`

// CaptureForeignKeys reads the foreign keys of the user's tables (of
// schema alone unless it is ""): what makes an INSERT lock a row of
// another table (FOR KEY SHARE), a cause of MultiXacts the scripts do not
// show.
func CaptureForeignKeys(ctx context.Context, connString, schema string) (timeline.Sample, error) {
	smp := timeline.Sample{Source: ForeignKeysSource}
	t0 := time.Now()
	defer func() { smp.Duration = float64(time.Since(t0).Microseconds()) / 1000 }()
	fail := func(err error) (timeline.Sample, error) {
		err = fmt.Errorf("read foreign keys: %w", err)
		smp.Error = err.Error()
		return smp, err
	}
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return fail(err)
	}
	cfg.RuntimeParams["application_name"] = explainAppName
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fail(fmt.Errorf("connect: %w", err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	qctx, cancel := context.WithTimeout(ctx, explainStatementTimeout)
	defer cancel()
	rows, err := conn.Query(qctx, foreignKeysSQL, maxForeignKeys, schema)
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	var fks []pgmetric.ForeignKey
	for rows.Next() {
		var fk pgmetric.ForeignKey
		if err := rows.Scan(&fk.Name, &fk.Schema, &fk.Table, &fk.Columns, &fk.RefSchema, &fk.RefTable, &fk.RefColumns); err != nil {
			return fail(err)
		}
		fks = append(fks, fk)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	smp.Values = map[string]float64{pgmetric.ForeignKeysRead: float64(len(fks))}
	if len(fks) > 0 {
		b, err := json.Marshal(fks)
		if err != nil {
			return fail(fmt.Errorf("encode foreign keys: %w", err))
		}
		smp.Detail = b
	}
	return smp, nil
}
