package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// missingIndex finds a top statement that reads a large table from end to
// end (and sorts what it found) because no index serves its WHERE and
// ORDER BY, and names the index to create. Its evidence is the plan
// captured at the end of the run (source "explain": the generic plan of
// each top statement), pg_stat_statements (the statement's share of
// database time, blocks per call) and pg_stat_user_tables (sequential
// scans and the rows they read); without a plan it reads the columns from
// the statement's text, and without statements it names the table.
type missingIndex struct{}

var _ diagnose.Rule = missingIndex{}

func (missingIndex) ID() string { return "missing-index" }

// Inputs names the sources the rule reads.
func (missingIndex) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.Statements, pgmetric.Explain, pgmetric.UserTables}}
}

// Thresholds. A sequential scan of a few thousand rows is cheaper than an
// index; beyond minScanRows rows read per execution, a query that returns
// few of them is doing work an index would skip.
const (
	minScanRows      = 10000.0
	topStatementWarn = 0.2  // share of database time that makes a statement "top"
	topStatementCrit = 0.5  // and that makes it the database's main work
	selectiveShare   = 0.1  // a filter keeping at most this share of the rows is selective
	fewRowsPerCall   = 1000 // a statement returning at most this many rows per call is not a report
)

// statementStat is one statement's totals over the run, from the
// pg_stat_statements sampler's per-interval top lists.
type statementStat struct {
	QueryID                 string
	Query                   string
	Calls, TotalMS, Rows    float64
	BlksHit, BlksRead       float64
	FirstT, LastT           float64
	meanByT                 []timeline.Point
	inExplain               bool
	explained               *pgmetric.ExplainedStatement
	workload, script, where string
}

func (s *statementStat) queryID() string {
	if s == nil {
		return ""
	}
	return s.QueryID
}

// statementIn is one statement's totals over [from, to).
func statementIn(run *timeline.Run, queryID string, from, to float64) *statementStat {
	st := &statementStat{QueryID: queryID}
	if queryID == "" {
		return st
	}
	for _, s := range run.SourceSamples(pgmetric.Statements) {
		if s.T < from || s.T >= to || s.Error != "" {
			continue
		}
		var top []pgmetric.Statement
		if !diagnose.Detail(&s, &top) {
			continue
		}
		for _, d := range top {
			if d.ID() != queryID {
				continue
			}
			if st.Calls == 0 {
				st.Query, st.FirstT = d.Query, s.T
			}
			st.Calls += d.Calls
			st.TotalMS += d.TotalMS
			st.Rows += d.Rows
			st.BlksHit += d.SharedBlksHit
			st.BlksRead += d.SharedBlksRead
			st.LastT = s.T
		}
	}
	return st
}

func (s *statementStat) meanMS() float64 {
	if s.Calls == 0 {
		return 0
	}
	return s.TotalMS / s.Calls
}

// statementTotals adds up the statements of the run, and the database's
// execution time (all statements, not only the top ones).
func statementTotals(run *timeline.Run) (stats map[string]*statementStat, execMS float64) {
	stats = map[string]*statementStat{}
	tick := diagnose.Tick(run)
	prevT := math.NaN()
	for _, s := range run.SourceSamples(pgmetric.Statements) {
		if s.Error != "" {
			continue
		}
		dt := tick
		if !math.IsNaN(prevT) && s.T > prevT {
			dt = s.T - prevT
		}
		prevT = s.T
		execMS += s.Values["exec_ms_per_s"] * dt
		var top []pgmetric.Statement
		if !diagnose.Detail(&s, &top) {
			continue
		}
		for _, d := range top {
			st := stats[d.ID()]
			if st == nil {
				st = &statementStat{QueryID: d.ID(), Query: d.Query, FirstT: s.T}
				stats[d.ID()] = st
			}
			st.Calls += d.Calls
			st.TotalMS += d.TotalMS
			st.Rows += d.Rows
			st.BlksHit += d.SharedBlksHit
			st.BlksRead += d.SharedBlksRead
			st.LastT = s.T
			if d.Calls > 0 {
				st.meanByT = append(st.meanByT, timeline.Point{T: s.T, V: d.TotalMS / d.Calls})
			}
		}
	}
	sum := 0.0
	for _, st := range stats {
		sum += st.TotalMS
	}
	return stats, math.Max(execMS, sum)
}

// lastExplain is the newest plan capture of the run, if any.
func lastExplain(run *timeline.Run) (float64, []pgmetric.ExplainedStatement) {
	samples := run.SourceSamples(pgmetric.Explain)
	for i := len(samples) - 1; i >= 0; i-- {
		var out []pgmetric.ExplainedStatement
		if samples[i].Error == "" && diagnose.Detail(&samples[i], &out) {
			return samples[i].T, out
		}
	}
	return 0, nil
}

// tableScans is a table's scan counters over a window.
type tableScans struct {
	Name                string // schema.table
	SeqScan, SeqTupRead float64
	IdxScan             float64
	LiveTup             float64
	readByT             []timeline.Point
	idxByT              []timeline.Point
}

func (t tableScans) rowsPerScan() float64 {
	if t.SeqScan == 0 {
		return 0
	}
	return t.SeqTupRead / t.SeqScan
}

func (t tableScans) shortName() string {
	if s, ok := strings.CutPrefix(t.Name, "public."); ok {
		return s
	}
	return t.Name
}

func userTables(run *timeline.Run) map[string]*tableScans {
	out := map[string]*tableScans{}
	for _, key := range run.Keys(pgmetric.UserTables) {
		name, ok := strings.CutSuffix(key, ".seq_tup_read")
		if !ok {
			continue
		}
		t := &tableScans{Name: name}
		t.readByT = run.Series(pgmetric.UserTables, name+".seq_tup_read")
		t.idxByT = run.Series(pgmetric.UserTables, name+".idx_scan")
		for _, p := range t.readByT {
			t.SeqTupRead += p.V
		}
		for _, p := range t.idxByT {
			t.IdxScan += p.V
		}
		for _, p := range run.Series(pgmetric.UserTables, name+".seq_scan") {
			t.SeqScan += p.V
		}
		if live := run.Series(pgmetric.UserTables, name+".n_live_tup"); len(live) > 0 {
			t.LiveTup = live[len(live)-1].V
		}
		out[name] = t
	}
	return out
}

// findTable matches a relation name (maybe unqualified) to a sampled table.
func findTable(tables map[string]*tableScans, schema, rel string) *tableScans {
	if schema != "" {
		if t := tables[schema+"."+rel]; t != nil {
			return t
		}
	}
	var found *tableScans
	for name, t := range tables {
		if strings.HasSuffix(name, "."+rel) {
			if found != nil {
				return nil // ambiguous
			}
			found = t
		}
	}
	return found
}

// scanUse is one sequential scan of a large table inside a statement,
// with what the statement asks of the table's rows: the conditions an
// index could look them up by and the order it could return them in.
type scanUse struct {
	relation, schema string
	r                sqlcheck.Rel
	tableRows        float64
	conds            []string // the scan's Filter and join condition, or its block's WHERE and ON
	filter           string   // the plan's Filter as printed, for evidence
	join             string   // the plan's join condition, for evidence
	sortKeys         []string
	perOuterRow      bool // in a correlated subquery
	parallel         bool
	estimate         float64 // rows the scan returns, per the plan
	fromPlan         bool
	table            *tableScans
	advice           sqlcheck.IndexAdvice
}

func (u scanUse) qualified() string {
	if u.schema != "" && u.schema != "public" {
		return u.schema + "." + u.relation
	}
	return u.relation
}

// cost orders a statement's scans: rows read per execution.
func (u scanUse) cost(st *statementStat) float64 {
	c := u.tableRows
	if u.perOuterRow && st != nil && st.Calls > 0 {
		c *= math.Max(1, st.Rows/st.Calls)
	}
	return c
}

// indexable reports whether an index could spare the scan: a selective
// filter, a lookup by key (a join, an outer query's value), or an ORDER BY
// of a statement that returns few rows (LIMIT).
func (u *scanUse) indexable(st *statementStat) bool {
	u.advice = sqlcheck.RecommendIndex(u.qualified(), u.conds, u.sortKeys, u.r)
	if len(u.advice.Columns) == 0 {
		return false
	}
	p := sqlcheck.ParseConditions(u.conds, u.r)
	few := st != nil && st.Calls > 0 && st.Rows/st.Calls <= fewRowsPerCall
	est := u.estimate
	if u.parallel {
		est *= 2.4 // the plan's per-process estimate, with the leader's share
	}
	switch {
	case u.fromPlan && u.tableRows > 0 && est > 0 && est <= selectiveShare*u.tableRows && len(p.Eq)+len(p.Ranges) > 0:
		return true
	case few:
		return true
	case u.perOuterRow && len(p.Eq) > 0:
		return true
	}
	return !u.fromPlan && len(p.Eq) > 0
}

// indexCandidate is a statement whose scans of large tables an index
// would spare, or (stmt nil) a table read by sequential scans.
type indexCandidate struct {
	stmt *statementStat
	uses []scanUse // biggest first
}

func (c indexCandidate) weight() float64 {
	if c.stmt != nil {
		return c.stmt.TotalMS
	}
	if len(c.uses) > 0 && c.uses[0].table != nil {
		return c.uses[0].table.SeqTupRead / 1e6
	}
	return 0
}

func (missingIndex) Check(run *timeline.Run) []diagnose.Finding {
	stats, execMS := statementTotals(run)
	explainT, plans := lastExplain(run)
	tables := userTables(run)
	var cands []indexCandidate
	covered := map[*tableScans]bool{}
	// judged holds the tables whose sequential scans a known statement
	// explains and no index would spare (ORDER BY random(), no
	// selective condition): not a missing index, whatever the counters.
	judged := map[*tableScans]bool{}
	addCandidate := func(st *statementStat, uses []scanUse) {
		if len(uses) == 0 {
			return
		}
		sort.SliceStable(uses, func(i, j int) bool { return uses[i].cost(st) > uses[j].cost(st) })
		for _, u := range uses {
			if u.table != nil {
				covered[u.table] = true
			}
		}
		cands = append(cands, indexCandidate{stmt: st, uses: uses})
	}
	// From plans.
	for i := range plans {
		p := &plans[i]
		st := stats[p.QueryID]
		if st == nil {
			st = &statementStat{QueryID: p.QueryID, Query: p.Query, Calls: p.Calls, TotalMS: p.TotalMS, Rows: p.Rows}
			stats[p.QueryID] = st
		}
		st.inExplain, st.explained = true, p
		var uses []scanUse
		for _, sc := range p.SeqScans {
			t := findTable(tables, sc.Schema, sc.Relation)
			rows := sc.TableRows
			if t != nil && t.LiveTup > rows {
				rows = t.LiveTup
			}
			if rows < minScanRows {
				continue
			}
			u := scanUse{relation: sc.Relation, schema: sc.Schema, tableRows: rows, filter: sc.Filter, join: sc.JoinCond,
				sortKeys: sc.SortKeys, perOuterRow: sc.SubPlan, parallel: sc.Parallel, estimate: sc.RowsEstimate, fromPlan: true, table: t,
				r: sqlcheck.Rel{Names: []string{sc.Relation}, BareOK: true}}
			if sc.Alias != "" && sc.Alias != sc.Relation {
				u.r.Names = append([]string{sc.Alias}, u.r.Names...)
			}
			if sc.SortKeys == nil && len(p.SeqScans) == 1 { // an older capture: the statement's sorts
				for _, so := range p.Sorts {
					u.sortKeys = append(u.sortKeys, so.Keys...)
				}
			}
			for _, c := range []string{sc.Filter, sc.JoinCond} {
				if c != "" {
					u.conds = append(u.conds, c)
				}
			}
			if u.indexable(st) {
				uses = append(uses, u)
			} else if t != nil {
				judged[t] = true
			}
		}
		addCandidate(st, uses)
	}
	// From statistics: heavy statements on tables read by sequential
	// scans, the columns from the query block naming each table. A
	// statement whose end-of-run plan no longer scans counts only if the
	// counters show the scans stopped during the run (an index was built).
	for _, st := range sortedStats(stats) {
		if st.Calls == 0 || (st.inExplain && planScans(st.explained)) {
			continue
		}
		var uses []scanUse
		for _, name := range sqlcheck.QueryTables(st.Query) {
			t := findTable(tables, "", name)
			if t == nil || covered[t] || t.rowsPerScan() < minScanRows || t.SeqScan < 2 {
				continue
			}
			b, ok := sqlcheck.TableClauses(st.Query, name)
			if !ok {
				continue
			}
			u := scanUse{relation: name, schema: strings.TrimSuffix(t.Name, "."+name), tableRows: math.Max(t.LiveTup, t.rowsPerScan()),
				conds: b.Conds, sortKeys: b.SortKeys, perOuterRow: b.PerOuterRow, r: b.Rel, table: t, join: strings.Join(b.JoinConds, " AND ")}
			if !u.indexable(st) {
				judged[t] = true
				continue
			}
			if _, resolved := resolvedAt(run, t, 0, false); st.inExplain && !resolved {
				judged[t] = true
				continue // the plan uses an index and the counters do not say otherwise
			}
			uses = append(uses, u)
		}
		addCandidate(st, uses)
	}
	// From the tables alone, when no statement explains their scans.
	if len(cands) == 0 {
		for _, t := range sortedTables(tables) {
			if covered[t] || judged[t] || t.rowsPerScan() < minScanRows || t.SeqScan < 3 {
				continue
			}
			parts := strings.SplitN(t.Name, ".", 2)
			u := scanUse{relation: parts[len(parts)-1], tableRows: math.Max(t.LiveTup, t.rowsPerScan()), table: t}
			if len(parts) == 2 {
				u.schema = parts[0]
			}
			cands = append(cands, indexCandidate{uses: []scanUse{u}})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].weight() > cands[j].weight() })
	var out []diagnose.Finding
	for _, c := range cands {
		out = append(out, c.finding(run, execMS, explainT))
		if len(out) == 3 {
			break
		}
	}
	return out
}

func sortedStats(stats map[string]*statementStat) []*statementStat {
	out := make([]*statementStat, 0, len(stats))
	for _, st := range stats {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TotalMS != out[j].TotalMS {
			return out[i].TotalMS > out[j].TotalMS
		}
		return out[i].QueryID < out[j].QueryID
	})
	return out
}

func sortedTables(tables map[string]*tableScans) []*tableScans {
	out := make([]*tableScans, 0, len(tables))
	for _, t := range tables {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// planScans reports whether an explained statement's plan has a
// sequential scan.
func planScans(e *pgmetric.ExplainedStatement) bool {
	return e != nil && len(e.SeqScans) > 0
}

// what says what a scan does, for the headline: "reads all 100,000 rows
// of journal_entry and sorts them", or "journal_line (200,000 rows, for a
// join)" after the first.
func (u scanUse) what(first bool) string {
	var how []string
	if u.perOuterRow {
		how = append(how, "once per outer row")
	}
	if len(sqlcheck.SortColumns(u.sortKeys, u.r)) > 0 {
		how = append(how, "sorted")
	}
	if u.join != "" {
		how = append(how, "for a join")
	}
	if first {
		s := fmt.Sprintf("reads all %s rows of %s", diagnose.HumanNum(u.tableRows), u.qualified())
		for _, h := range how {
			switch h {
			case "sorted":
				s += " and sorts them"
			case "for a join":
				s += " to join them"
			default:
				s += " " + h
			}
		}
		return s
	}
	return fmt.Sprintf("%s (%s)", u.qualified(), strings.Join(append([]string{diagnose.HumanNum(u.tableRows) + " rows"}, how...), ", "))
}

func (c indexCandidate) finding(run *timeline.Run, execMS, explainT float64) diagnose.Finding {
	from, to := diagnose.LoadWindow(run)
	f := diagnose.Finding{Start: from, End: math.Max(from, to-1e-9),
		References: []string{
			"https://www.postgresql.org/docs/current/sql-createindex.html#SQL-CREATEINDEX-CONCURRENTLY",
			"https://www.postgresql.org/docs/current/indexes-partial.html",
			"https://www.postgresql.org/docs/current/indexes-ordering.html",
			"https://www.postgresql.org/docs/current/using-explain.html",
		}}
	main := c.uses[0]
	if c.stmt != nil {
		matchScripts(run, map[string]*statementStat{c.stmt.QueryID: c.stmt})
	}
	share := 0.0
	if c.stmt != nil && execMS > 0 {
		share = math.Min(1, c.stmt.TotalMS/execMS)
		f.Workload = c.stmt.workload
		if c.stmt.FirstT > 0 || c.stmt.LastT > 0 {
			f.Start, f.End = math.Max(from, c.stmt.FirstT-diagnose.Tick(run)), math.Max(c.stmt.LastT, c.stmt.FirstT)
		}
	}
	f.Severity = diagnose.Info
	switch {
	case c.stmt == nil:
		if main.table != nil && main.table.SeqTupRead/math.Max(to-from, 1) >= main.tableRows/10 {
			f.Severity = diagnose.Warning // the whole table read every ten seconds or more
		}
	case share >= topStatementCrit && failedShare(run) >= 0.01:
		f.Severity = diagnose.Critical
	case share >= topStatementWarn:
		f.Severity = diagnose.Warning
	}
	resolvedT, resolved := resolvedAt(run, main.table, explainT, main.fromPlan)
	if resolved {
		f.Severity, f.Resolved = diagnose.Info, math.Max(resolvedT, 1e-9)
		f.End = math.Max(f.Start, resolvedT)
		if c.stmt != nil { // the statement as it was before the index
			if before := statementIn(run, c.stmt.QueryID, f.Start, resolvedT); before.Calls > 0 {
				before.workload, before.where = c.stmt.workload, c.stmt.where
				c.stmt = before
			}
		}
	}

	// Evidence.
	if c.stmt != nil {
		perCall := ""
		if c.stmt.Calls > 0 && c.stmt.BlksHit+c.stmt.BlksRead > 0 {
			perCall = fmt.Sprintf(", %s blocks (%s) touched per call", diagnose.HumanNum((c.stmt.BlksHit+c.stmt.BlksRead)/c.stmt.Calls),
				diagnose.HumanBytes((c.stmt.BlksHit+c.stmt.BlksRead)/c.stmt.Calls*8192))
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Statements + ":" + c.stmt.QueryID, T: c.stmt.LastT, Value: c.stmt.meanMS(),
			Text: fmt.Sprintf("`%s`: %s calls, mean %s, %s of the database's execution time%s",
				diagnose.OneLine(c.stmt.Query, 160), diagnose.HumanNum(c.stmt.Calls), diagnose.HumanMS(c.stmt.meanMS()), diagnose.HumanPct(share), perCall)})
		if c.stmt.where != "" {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "script:" + c.stmt.where, Text: fmt.Sprintf("the statement of workload %s's %s", c.stmt.workload, c.stmt.where)})
		}
	}
	span := math.Max(to-from, diagnose.Tick(run))
	for _, u := range c.uses {
		if u.fromPlan {
			scan := "Seq Scan"
			if u.parallel {
				scan = "Parallel Seq Scan"
			}
			text := fmt.Sprintf("generic plan: %s on %s (%s rows)", scan, u.qualified(), diagnose.HumanNum(u.tableRows))
			if u.filter != "" {
				text += ", Filter: " + diagnose.OneLine(u.filter, 160)
			}
			if u.join != "" {
				text += ", feeding a join on " + diagnose.OneLine(u.join, 80)
			}
			if u.perOuterRow {
				text += ", in a correlated subquery (run once per outer row)"
			}
			if len(u.sortKeys) > 0 {
				text += "; then Sort by " + strings.Join(u.sortKeys, ", ")
			}
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "explain:" + c.stmt.queryID(), T: explainT, Value: u.tableRows, Text: text})
		} else if len(u.conds) > 0 || len(u.sortKeys) > 0 {
			text := fmt.Sprintf("in the statement, %s is read with", u.qualified())
			if len(u.conds) > 0 {
				text += " conditions " + diagnose.OneLine(strings.Join(u.conds, " AND "), 140)
			}
			if len(u.sortKeys) > 0 {
				text += " ordered by " + strings.Join(u.sortKeys, ", ")
			}
			if u.perOuterRow {
				text += ", in a correlated subquery (once per outer row)"
			}
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Statements + ":" + c.stmt.queryID(), Text: text})
		}
		if t := u.table; t != nil && t.SeqScan > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_user_tables:" + t.Name + ".seq_tup_read", T: f.End, Value: t.SeqTupRead,
				Text: fmt.Sprintf("%s sequential scans of %s read %s rows (%s per scan, %s rows/s); index scans: %s",
					diagnose.HumanNum(t.SeqScan), t.Name, diagnose.HumanNum(t.SeqTupRead), diagnose.HumanNum(t.rowsPerScan()), diagnose.HumanNum(t.SeqTupRead/span), diagnose.HumanNum(t.IdxScan))})
		}
	}
	event := ""
	if resolved {
		event = diagnose.EventNear(run, resolvedT)
		text := fmt.Sprintf("from %.0f s the sequential scans stopped and index scans took over: an index serves the statement now", resolvedT)
		if event != "" {
			text += " (after event " + event + ")"
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_user_tables:" + main.table.Name + ".seq_tup_read", T: resolvedT, Text: text})
		if after := statementIn(run, c.stmt.queryID(), resolvedT+diagnose.Tick(run), math.Inf(1)); after.Calls > 0 && c.stmt != nil {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Statements + ":" + c.stmt.QueryID, T: after.LastT, Value: after.meanMS(),
				Text: fmt.Sprintf("after that: mean %s over %s calls (before: %s)", diagnose.HumanMS(after.meanMS()), diagnose.HumanNum(after.Calls), diagnose.HumanMS(c.stmt.meanMS()))})
		}
	}
	if lat := workloadLatency(run, f.Workload, f.Start, f.End); lat != "" {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + f.Workload + ".latency", Text: lat})
	}

	// Words.
	var indexes, creates []string
	for _, u := range c.uses {
		if u.advice.Create != "" {
			indexes = append(indexes, u.advice.Short())
			creates = append(creates, fmt.Sprintf("`%s` %s", u.advice.Create, u.advice.Why))
		}
	}
	switch {
	case c.stmt != nil:
		what := main.what(true)
		var more []string
		for _, u := range c.uses[1:] {
			more = append(more, u.what(false))
		}
		if len(more) > 0 {
			what += ", and scans " + strings.Join(more, ", ")
		}
		if c.stmt.Calls > 0 && c.stmt.Rows > 0 {
			what += fmt.Sprintf(" to return %s rows per call", diagnose.HumanNum(c.stmt.Rows/c.stmt.Calls))
		}
		noun := "missing index on "
		if len(indexes) > 1 {
			noun = "missing indexes on "
		}
		f.Headline = fmt.Sprintf("Top statement `%s` (%s of database time, mean %s, %s calls) %s: %s%s",
			diagnose.OneLine(c.stmt.Query, 90), diagnose.HumanPct(share), diagnose.HumanMS(c.stmt.meanMS()), diagnose.HumanNum(c.stmt.Calls), what, noun, strings.Join(indexes, "; "))
	default:
		f.Headline = fmt.Sprintf("%s is read by sequential scans: %s scans of %s rows each (%s rows in all), %s",
			main.qualified(), diagnose.HumanNum(main.table.SeqScan), diagnose.HumanNum(main.table.rowsPerScan()), diagnose.HumanNum(main.table.SeqTupRead), unnamedScans(run, main))
	}
	if resolved {
		prefix := fmt.Sprintf("Resolved at %.0f s", resolvedT)
		if event != "" {
			prefix += " after " + event
		}
		f.Headline = prefix + ": " + f.Headline
	}
	f.Mechanism = fmt.Sprintf("Without an index matching its WHERE, join and ORDER BY, PostgreSQL reads every row of %s, filters them and sorts or hashes the survivors to return a handful; "+
		"each execution costs the whole table, so time grows with the table and with concurrency, and sessions pile up holding connections while they scan. "+
		"An index on the looked-up and ordered columns lets the executor read just the matching entries, in order, and stop at the LIMIT.", main.qualified())
	if main.perOuterRow || (len(c.uses) > 1 && c.uses[1].perOuterRow) {
		f.Mechanism += " A scan inside a correlated subquery is repeated for every row of the outer query."
	}
	if len(creates) == 0 {
		f.Remedy = fmt.Sprintf("Find the statements scanning %s (pg_stat_statements with shared_blks_hit+read per call, or EXPLAIN of the top queries) and index the columns of their WHERE/ORDER BY with CREATE INDEX CONCURRENTLY, which does not block writes.", main.qualified())
	} else {
		f.Remedy = strings.Join(creates, " ") + fmt.Sprintf(" Build with CONCURRENTLY so writes continue during the build (it takes longer and cannot run in a transaction; drop and retry an INVALID index if it fails), then ANALYZE and confirm with EXPLAIN that the plan uses the index%s.",
			map[bool]string{true: "es", false: ""}[len(creates) > 1])
		for _, u := range c.uses {
			if u.advice.Alternative != "" {
				f.Remedy += " " + u.advice.Alternative
			}
		}
	}
	return f
}

// unnamedScans says why a table's scans come without their statement:
// statements that name the table but whose clauses could not be read, or
// none among those pg_stat_statements recorded, or no statistics at all.
func unnamedScans(run *timeline.Run, u scanUse) string {
	if len(run.SourceSamples(pgmetric.Statements)) == 0 {
		return "no statement statistics to name the query"
	}
	stats, _ := statementTotals(run)
	var naming []string
	for _, st := range sortedStats(stats) {
		if st.Calls > 0 && contains(sqlcheck.QueryTables(st.Query), u.relation) && len(naming) < 2 {
			naming = append(naming, "`"+diagnose.OneLine(st.Query, 80)+"`")
		}
	}
	if len(naming) > 0 {
		return "by statements whose conditions firedrill could not read: " + strings.Join(naming, ", ")
	}
	return "by no statement among the top ones pg_stat_statements recorded"
}

// resolvedAt reports when a table's sequential reads stopped for good
// while index scans went on (an index was built mid-run); a scan the
// end-of-run plan still shows is not resolved.
func resolvedAt(run *timeline.Run, t *tableScans, explainT float64, planStillScans bool) (float64, bool) {
	if t == nil || len(t.readByT) < 6 || (planStillScans && explainT > 0) {
		return 0, false
	}
	pts := t.readByT
	peak := 0.0
	for _, p := range pts {
		peak = math.Max(peak, p.V)
	}
	if peak == 0 {
		return 0, false
	}
	last := -1
	for i, p := range pts {
		if p.V >= 0.1*peak {
			last = i
		}
	}
	if last < 0 || last >= len(pts)-3 {
		return 0, false
	}
	after := pts[last+1:]
	if diagnose.SumPoints(t.idxByT, pts[last].T, math.Inf(1)) == 0 || float64(len(after)) < 0.15*float64(len(pts)) {
		return 0, false
	}
	return pts[last].T, true
}

// failedShare is the share of the workloads' transactions that failed.
func failedShare(run *timeline.Run) float64 {
	var ok, failed int64
	for _, iv := range run.Intervals {
		ok += iv.Count
		failed += iv.Failed
	}
	if ok+failed == 0 {
		return 0
	}
	return float64(failed) / float64(ok+failed)
}

// matchScripts finds each statement's workload script command by its
// text: literals and parameters aside, the statement starts like the
// command's first line.
func matchScripts(run *timeline.Run, stats map[string]*statementStat) {
	type cmd struct {
		workload, where, norm string
	}
	var cmds []cmd
	for _, w := range run.Manifest.Workloads {
		for si, s := range w.Scripts {
			lines := diagnose.CommandLines(run, w.Name, si, len(s.Commands))
			for i, text := range s.Commands {
				if strings.HasPrefix(strings.TrimSpace(text), `\`) {
					continue
				}
				norm := sqlcheck.Normalize(text)
				if len(norm) < 8 {
					continue
				}
				where := s.Name
				if i < len(lines) && lines[i] > 0 {
					where = fmt.Sprintf("%s:%d", s.Name, lines[i])
				}
				cmds = append(cmds, cmd{w.Name, where, norm})
			}
		}
	}
	for _, st := range stats {
		if st.workload != "" {
			continue
		}
		q := sqlcheck.Normalize(st.Query)
		for _, c := range cmds {
			if strings.HasPrefix(q, c.norm) || strings.HasPrefix(c.norm, q) {
				st.workload, st.where = c.workload, c.where
				break
			}
		}
	}
}
