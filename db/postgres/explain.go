package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	pgsampler "github.com/firedrill/firedrill/db/postgres/sampler"
	"github.com/firedrill/firedrill/timeline"
)

// ExplainSource is the timeline source of the plans captured at the end
// of a run (CaptureExplains).
//
// Values:
//
//	statements  count  statements whose plan was asked for
//	plans       count  plans obtained
//	seq_scans   count  sequential scans in those plans
//
// Detail: []ExplainedStatement, most execution time first.
const ExplainSource = pgmetric.Explain

// explainTop is how many statements the runner explains at the end of a run.
const explainTop = 10

// explainStatementTimeout bounds each PREPARE and EXPLAIN on the server.
const explainStatementTimeout = 5 * time.Second

// explainAppName tags the session; the samplers leave out every
// application_name starting with "firedrill-sampler".
const explainAppName = "firedrill-sampler-explain"

// ExplainedStatement is pgmetric.ExplainedStatement, named here too so existing callers compile.
type ExplainedStatement = pgmetric.ExplainedStatement

// PlanSeqScan is pgmetric.PlanSeqScan, named here too so existing callers compile.
type PlanSeqScan = pgmetric.PlanSeqScan

// PlanSort is pgmetric.PlanSort, named here too so existing callers compile.
type PlanSort = pgmetric.PlanSort

// CaptureExplains asks the server for the generic plans of the top
// statements of the run: the top statements by total execution time in
// pg_stat_statements (the samplers' own, utility statements and
// transaction control left out), each prepared and explained with
// plan_cache_mode = force_generic_plan inside a transaction that is rolled
// back, so nothing runs and nothing stays. Call it after the load ends,
// while the server still runs; the sample's T is left for the caller. A
// statement whose plan cannot be had keeps its counters and says why in
// Error; an error is returned when nothing could be read (no
// pg_stat_statements, no connection).
func CaptureExplains(ctx context.Context, connString string, top int) (timeline.Sample, error) {
	return captureExplains(ctx, connString, top, "")
}

// captureExplains is CaptureExplains with the workloads' search_path.
func captureExplains(ctx context.Context, connString string, top int, searchPath string) (timeline.Sample, error) {
	smp := timeline.Sample{Source: ExplainSource}
	t0 := time.Now()
	defer func() { smp.Duration = float64(time.Since(t0).Microseconds()) / 1000 }()
	fail := func(err error) (timeline.Sample, error) {
		err = fmt.Errorf("explain top statements: %w", err)
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
	// No client-side prepared statements: DEALLOCATE ALL must not pull
	// the rug from under pgx's statement cache.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fail(fmt.Errorf("connect: %w", err))
	}
	defer conn.Close(context.WithoutCancel(ctx))

	var version int
	if err := conn.QueryRow(ctx, pgsampler.Marker+" SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return fail(fmt.Errorf("read server version: %w", err))
	}
	if version < 120000 {
		return fail(fmt.Errorf("generic plans need PostgreSQL 12 or later (plan_cache_mode); the server is %d", version))
	}
	schema, err := statementsSchema(ctx, conn)
	if err != nil {
		return fail(err)
	}
	stmts, err := topStatements(ctx, conn, schema, top)
	if err != nil {
		return fail(err)
	}
	plans, scans := 0, 0
	if len(stmts) > 0 {
		if err := explainAll(ctx, conn, stmts); err != nil {
			return fail(err)
		}
		for i := range stmts {
			if stmts[i].Plan != nil {
				plans++
				scans += len(stmts[i].SeqScans)
			}
		}
		tableRows(ctx, conn, stmts)
	}
	smp.Values = map[string]float64{"statements": float64(len(stmts)), "plans": float64(plans), "seq_scans": float64(scans)}
	if len(stmts) > 0 {
		b, err := json.Marshal(stmts)
		if err != nil {
			return fail(fmt.Errorf("encode plans: %w", err))
		}
		smp.Detail = b
	}
	return smp, nil
}

// statementsSchema finds where pg_stat_statements is installed.
func statementsSchema(ctx context.Context, conn *pgx.Conn) (string, error) {
	var schema string
	err := conn.QueryRow(ctx, pgsampler.Marker+`
SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname = 'pg_stat_statements'`).Scan(&schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errors.New("pg_stat_statements is not installed (shared_preload_libraries = 'pg_stat_statements', then CREATE EXTENSION)")
	}
	if err != nil {
		return "", fmt.Errorf("look for pg_stat_statements: %w", err)
	}
	return schema, nil
}

// topStatementsSQL reads the statements of the current database by total
// execution time, those run more than once (the workloads') first, before
// one-offs such as setup; %[1]s is the extension's schema, %[2]s the time
// column (total_exec_time from 1.8, total_time before).
const topStatementsSQL = pgsampler.Marker + `
SELECT s.queryid::text, min(s.query), sum(s.calls)::float8, sum(s.%[2]s)::float8, sum(s.rows)::float8,
	sum(s.shared_blks_hit)::float8, sum(s.shared_blks_read)::float8
FROM %[1]s.pg_stat_statements(true) s
WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND s.queryid IS NOT NULL
	AND position('` + pgsampler.Marker + `' in s.query) = 0
GROUP BY s.queryid
ORDER BY sum(s.calls) > 1 DESC, 4 DESC
LIMIT $1`

func topStatements(ctx context.Context, conn *pgx.Conn, schema string, top int) ([]ExplainedStatement, error) {
	if top <= 0 {
		top = explainTop
	}
	read := func(column string) ([]ExplainedStatement, error) {
		rows, err := conn.Query(ctx, fmt.Sprintf(topStatementsSQL, pgx.Identifier{schema}.Sanitize(), column), top*5+20)
		if err != nil {
			return nil, err
		}
		var out []ExplainedStatement
		for rows.Next() {
			var s ExplainedStatement
			if err := rows.Scan(&s.QueryID, &s.Query, &s.Calls, &s.TotalMS, &s.Rows, &s.SharedBlksHit, &s.SharedBlksRead); err != nil {
				return nil, err
			}
			if s.Calls > 0 {
				s.MeanMS = s.TotalMS / s.Calls
			}
			out = append(out, s)
		}
		return out, rows.Err()
	}
	all, err := read("total_exec_time")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42703" { // undefined_column: extension older than 1.8
		all, err = read("total_time")
	}
	if err != nil {
		return nil, fmt.Errorf("read pg_stat_statements: %w", err)
	}
	var out []ExplainedStatement
	for _, s := range all {
		if explainable(s.Query) {
			out = append(out, s)
		}
		if len(out) == top {
			break
		}
	}
	return out, nil
}

// explainable reports whether a statement is a query EXPLAIN takes
// (not a utility statement, not transaction control).
func explainable(query string) bool {
	word := strings.ToLower(firstWord(query))
	switch word {
	case "select", "insert", "update", "delete", "with", "values", "table", "merge":
		return true
	}
	return false
}

// firstWord is a statement's first keyword, after comments and parentheses.
func firstWord(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n(")
		switch {
		case strings.HasPrefix(q, "--"):
			if i := strings.IndexByte(q, '\n'); i >= 0 {
				q = q[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(q, "/*"):
			if i := strings.Index(q, "*/"); i >= 0 {
				q = q[i+2:]
				continue
			}
			return ""
		}
		end := strings.IndexFunc(q, func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		})
		if end < 0 {
			return q
		}
		return q[:end]
	}
}

var paramRef = regexp.MustCompile(`\$(\d+)`)

// paramCount is the highest $n a statement's text uses.
func paramCount(q string) int {
	n := 0
	for _, m := range paramRef.FindAllStringSubmatch(stripQuoted(q), -1) {
		if v, err := strconv.Atoi(m[1]); err == nil && v > n {
			n = v
		}
	}
	return n
}

// stripQuoted blanks string literals and quoted identifiers, so a "$1"
// inside them does not count as a parameter.
func stripQuoted(q string) string {
	b := []byte(q)
	for i := 0; i < len(b); i++ {
		if b[i] != '\'' && b[i] != '"' {
			continue
		}
		quote := b[i]
		for j := i + 1; j < len(b); j++ {
			if b[j] == quote {
				i = j
				break
			}
			b[j] = ' '
			i = j
		}
	}
	return string(b)
}

// explainAll gets each statement's generic plan in one transaction that
// is rolled back, each under a savepoint so one failure spares the rest.
func explainAll(ctx context.Context, conn *pgx.Conn, stmts []ExplainedStatement) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		_, _ = conn.Exec(context.WithoutCancel(ctx), pgsampler.Marker+" DEALLOCATE ALL")
	}()
	setup := fmt.Sprintf("%s SET LOCAL statement_timeout = %d; SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL lock_timeout = %d",
		pgsampler.Marker, explainStatementTimeout.Milliseconds(), explainStatementTimeout.Milliseconds())
	if _, err := tx.Exec(ctx, setup); err != nil {
		return fmt.Errorf("set plan_cache_mode: %w", err)
	}
	for i := range stmts {
		s := &stmts[i]
		if _, err := tx.Exec(ctx, "SAVEPOINT fd_explain"); err != nil {
			return fmt.Errorf("savepoint: %w", err)
		}
		plan, err := explainOne(ctx, tx, fmt.Sprintf("fd_explain_%d", i+1), s.Query)
		end := "RELEASE SAVEPOINT fd_explain"
		if err != nil {
			s.Error = err.Error()
			end = "ROLLBACK TO SAVEPOINT fd_explain"
		} else {
			s.Plan = plan
			s.TotalCost, s.SeqScans, s.Sorts = planNodes(plan)
		}
		if _, err := tx.Exec(ctx, end); err != nil {
			return fmt.Errorf("end savepoint: %w", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Prepared statements are not transactional: drop it, whatever
		// happened (the session has no others).
		if _, err := tx.Exec(ctx, "DEALLOCATE ALL"); err != nil {
			return fmt.Errorf("deallocate: %w", err)
		}
	}
	return nil
}

// explainOne prepares query and explains the generic plan of its execution.
func explainOne(ctx context.Context, tx pgx.Tx, name, query string) (json.RawMessage, error) {
	query = strings.TrimRight(strings.TrimSpace(query), ";")
	if _, err := tx.Exec(ctx, "PREPARE "+name+" AS "+query); err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	args := ""
	if n := paramCount(query); n > 0 {
		args = "(" + strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ") + ")"
	}
	var plan string
	if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) EXECUTE "+name+args).Scan(&plan); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	if !json.Valid([]byte(plan)) {
		return nil, errors.New("explain: the plan is not JSON")
	}
	return json.RawMessage(plan), nil
}

// planNode is the part of an EXPLAIN (FORMAT JSON) node the rules use.
type planNode struct {
	NodeType      string     `json:"Node Type"`
	Relationship  string     `json:"Parent Relationship"`
	Relation      string     `json:"Relation Name"`
	Schema        string     `json:"Schema"`
	Alias         string     `json:"Alias"`
	ParallelAware bool       `json:"Parallel Aware"`
	PlanRows      float64    `json:"Plan Rows"`
	TotalCost     float64    `json:"Total Cost"`
	Filter        string     `json:"Filter"`
	SortKey       []string   `json:"Sort Key"`
	PresortedKey  []string   `json:"Presorted Key"`
	HashCond      string     `json:"Hash Cond"`
	MergeCond     string     `json:"Merge Cond"`
	JoinFilter    string     `json:"Join Filter"`
	Plans         []planNode `json:"Plans"`
}

// passThrough lists nodes that hand their one input's rows up unchanged
// in content: a Sort above them orders the scan's own rows.
var passThrough = map[string]bool{
	"Gather": true, "Gather Merge": true, "Limit": true, "Result": true, "Materialize": true,
	"Memoize": true, "Hash": true, "Subquery Scan": true, "Unique": true, "LockRows": true,
}

// planNodes reads a plan's total cost, sequential scans and sorts.
func planNodes(plan json.RawMessage) (cost float64, scans []PlanSeqScan, sorts []PlanSort) {
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if json.Unmarshal(plan, &doc) != nil || len(doc) == 0 {
		return 0, nil, nil
	}
	var walk func(n *planNode, up []*planNode)
	walk = func(n *planNode, up []*planNode) {
		switch n.NodeType {
		case "Seq Scan":
			scans = append(scans, seqScan(n, up))
		case "Sort", "Incremental Sort":
			sorts = append(sorts, PlanSort{Keys: n.SortKey, Presorted: n.PresortedKey, Node: n.NodeType})
		}
		up = append(up, n)
		for i := range n.Plans {
			walk(&n.Plans[i], up[:len(up):len(up)])
		}
	}
	walk(&doc[0].Plan, nil)
	return doc[0].Plan.TotalCost, scans, sorts
}

// seqScan describes a Seq Scan node with what its ancestors (up, the
// root first) ask of it.
func seqScan(n *planNode, up []*planNode) PlanSeqScan {
	sc := PlanSeqScan{Relation: n.Relation, Schema: n.Schema, Alias: n.Alias,
		RowsEstimate: n.PlanRows, Filter: n.Filter, Parallel: n.ParallelAware}
	child := n
	sorting, joining := true, true
	for i := len(up) - 1; i >= 0; i-- {
		p := up[i]
		if child.Relationship == "SubPlan" {
			sc.SubPlan = true
		}
		switch {
		case p.NodeType == "Sort" || p.NodeType == "Incremental Sort":
			if sorting && len(sc.SortKeys) == 0 {
				sc.SortKeys = p.SortKey
			}
			joining = false
		case strings.HasSuffix(p.NodeType, "Join") || p.NodeType == "Nested Loop":
			if joining && sc.JoinCond == "" {
				sc.JoinCond = strings.TrimSpace(p.HashCond + " " + p.MergeCond + " " + p.JoinFilter)
			}
			sorting, joining = false, false
		case passThrough[p.NodeType]:
		default: // aggregates, appends …: what is above no longer sees this scan's rows as such
			sorting, joining = false, false
		}
		child = p
	}
	return sc
}

// tableRows adds each scanned table's size (pg_class.reltuples) and
// schema; a table it cannot find keeps what the plan said.
func tableRows(ctx context.Context, conn *pgx.Conn, stmts []ExplainedStatement) {
	type info struct {
		rows   float64
		schema string
	}
	cache := map[string]*info{}
	for i := range stmts {
		for j := range stmts[i].SeqScans {
			sc := &stmts[i].SeqScans[j]
			name := pgx.Identifier{sc.Relation}.Sanitize()
			if sc.Schema != "" {
				name = pgx.Identifier{sc.Schema, sc.Relation}.Sanitize()
			}
			in, ok := cache[name]
			if !ok {
				in = &info{}
				err := conn.QueryRow(ctx, pgsampler.Marker+`
SELECT greatest(c.reltuples, 0)::float8, n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass($1)`, name).Scan(&in.rows, &in.schema)
				if err != nil {
					in = nil
				}
				cache[name] = in
			}
			if in != nil {
				sc.TableRows = in.rows
				if sc.Schema == "" {
					sc.Schema = in.schema
				}
			}
		}
	}
}

// Evidence captures the top statements' plans (ExplainSource), the
// bodies of the functions the scripts call (FunctionsSource) and the
// foreign keys (ForeignKeysSource): the runner
// calls it once the load has ended, before the server stops. Failing is
// recorded as the sample's error, never the run's.
func (tg *target) Evidence(ctx context.Context) ([]timeline.Sample, error) {
	if ctx.Err() != nil || tg.userConnString == "" {
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	searchPath := ""
	if tg.confined() {
		searchPath = quoteIdent(tg.schema) // as the workloads ran
	}
	// As the scenario's role: planning folds calls of immutable functions
	// with constant arguments, so EXPLAIN alone can run the scenario's
	// code; and as that role it sees the statements its sessions ran.
	smp, err := captureExplains(ctx, tg.userConnString, explainTop, searchPath)
	samples := []timeline.Sample{smp}
	schema := "" // an embedded server is firedrill's: all of it
	if tg.confined() {
		schema = tg.schema // a given server: only firedrill's schema
	}
	if len(tg.called) > 0 {
		fns, ferr := captureFunctions(ctx, tg.userConnString, tg.called, searchPath, schema)
		samples = append(samples, fns)
		err = errors.Join(err, ferr)
	}
	fks, ferr := CaptureForeignKeys(ctx, tg.userConnString, schema)
	return append(samples, fks), errors.Join(err, ferr)
}
