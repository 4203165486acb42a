package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// tempSpill finds queries whose sorts and hashes outgrow work_mem and
// spill to temporary files on every call: each call then writes (and
// reads back) its rows on disk instead of sorting them in memory.
//
// Thresholds: the field treats any temporary file as worth a look —
// PostgreSQL logs each one with log_temp_files = 0 (the CIS benchmark's
// setting), RDS Performance Insights charts pg_stat_database's temp_files
// and temp_bytes and ranks statements by temporary blocks written per
// call, and postgres_exporter exports both counters. Under a load test a
// one-off spill (a CREATE INDEX, one report) is not the problem; the rule
// warns when spills keep coming: temporary files in at least
// tempSpillTicks of tempSpillWindow consecutive samples at
// tempSpillMinRate or more. The statement comes from pg_stat_statements'
// temp_blks_written; the sizes come from pg_stat_database's temp_bytes
// per temp file (what a sort or hash put on disk: a sort's file holds its
// rows once, where temp_blks_written counts every merge pass again), and
// the remedy's work_mem from the largest of them.
type tempSpill struct{}

var _ diagnose.Rule = tempSpill{}

func (tempSpill) ID() string { return "temp-spill" }

// Inputs names the sources the rule reads.
func (tempSpill) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.Database}, Also: []string{pgmetric.Statements, pgmetric.Settings}}
}

// Thresholds of temp-spill.
const (
	tempSpillWindow  = 5       // samples in the rolling window
	tempSpillTicks   = 3       // of which this many saw temporary files
	tempSpillMinRate = 1 << 20 // bytes/s over the window
)

// spillStretch is a stretch of samples that kept writing temporary files.
type spillStretch struct {
	From, To  float64
	Files     float64
	Bytes     float64
	PeakBytes float64 // in one interval
	PeakT     float64
	// LargestFile is the largest temp_bytes ÷ temp_files of one interval:
	// the size of the biggest sorts or hashes that spilled (at least).
	LargestFile  float64
	LargestFileT float64
}

func (r tempSpill) Check(run *timeline.Run) []diagnose.Finding {
	s, ok := r.stretch(run)
	if !ok {
		return nil
	}
	return []diagnose.Finding{r.finding(run, s)}
}

// stretch finds the first stretch in which the rolling window
// qualifies, extended while temporary files keep coming.
func (tempSpill) stretch(run *timeline.Run) (spillStretch, bool) {
	tick := diagnose.Tick(run)
	type pt struct{ t, files, bytes float64 }
	var pts []pt
	for _, s := range run.SourceSamples(pgmetric.Database) {
		if s.Error != "" {
			continue
		}
		files, ok := s.Values[pgmetric.TempFiles]
		if !ok {
			continue
		}
		pts = append(pts, pt{s.T, files, s.Values[pgmetric.TempBytes]})
	}
	start := -1
	for i := range pts {
		lo := max(0, i-tempSpillWindow+1)
		n, bytes := 0, 0.0
		for _, p := range pts[lo : i+1] {
			if p.files > 0 {
				n++
			}
			bytes += p.bytes
		}
		span := pts[i].t - pts[lo].t + tick
		if n >= tempSpillTicks && bytes/span >= tempSpillMinRate {
			start = i
			break
		}
	}
	if start < 0 {
		return spillStretch{}, false
	}
	// Back to the first sample of the run of spills, forward while they
	// keep coming (a gap of a whole window ends it).
	from := start
	for from > 0 && pts[from-1].files > 0 {
		from--
	}
	to, quiet := start, 0
	for j := start + 1; j < len(pts) && quiet < tempSpillWindow; j++ {
		if pts[j].files > 0 {
			to, quiet = j, 0
		} else {
			quiet++
		}
	}
	s := spillStretch{From: math.Max(0, pts[from].t-tick), To: pts[to].t}
	for _, p := range pts[from : to+1] {
		s.Files += p.files
		s.Bytes += p.bytes
		if p.bytes > s.PeakBytes {
			s.PeakBytes, s.PeakT = p.bytes, p.t
		}
		if p.files > 0 && p.bytes/p.files > s.LargestFile {
			s.LargestFile, s.LargestFileT = p.bytes/p.files, p.t
		}
	}
	return s, true
}

// spiller is a statement's temporary writes over the stretch.
type spiller struct {
	stat       *statementStat
	tempBlocks float64
	calls      float64
}

// perCall is the statement's spill per call, bytes.
func (s spiller) perCall() float64 {
	if s.calls <= 0 {
		return 0
	}
	return s.tempBlocks * pgBlockBytes / s.calls
}

// spillers are the statements that wrote temporary blocks over
// [from, to], most first.
func spillers(run *timeline.Run, from, to float64) []spiller {
	byID := map[string]*spiller{}
	for _, s := range run.SourceSamples(pgmetric.Statements) {
		if s.T < from || s.T > to+diagnose.Tick(run) {
			continue
		}
		var stmts []pgmetric.Statement
		if !diagnose.Detail(&s, &stmts) {
			continue
		}
		for _, st := range stmts {
			if st.TempBlksWritten <= 0 {
				continue
			}
			sp, ok := byID[st.ID()]
			if !ok {
				sp = &spiller{stat: &statementStat{QueryID: st.ID(), Query: st.Query}}
				byID[st.ID()] = sp
			}
			sp.tempBlocks += st.TempBlksWritten
			sp.calls += st.Calls
			sp.stat.Calls += st.Calls
			sp.stat.TotalMS += st.TotalMS
		}
	}
	stats := map[string]*statementStat{}
	var out []spiller
	for id, sp := range byID {
		stats[id] = sp.stat
		out = append(out, *sp)
	}
	matchScripts(run, stats)
	sort.Slice(out, func(i, j int) bool {
		if out[i].tempBlocks != out[j].tempBlocks {
			return out[i].tempBlocks > out[j].tempBlocks
		}
		return out[i].stat.QueryID < out[j].stat.QueryID
	})
	return out
}

// volatileSort matches sort keys whose value changes on every call or row
// (random(), clock_timestamp(), gen_random_uuid()): no index holds rows
// in their order.
var volatileSort = regexp.MustCompile(`(?i)\b(random|gen_random_uuid|uuid_generate_v4|clock_timestamp|timeofday)\s*\(`)

// orderBy is the ORDER BY list of a statement's text, if it has one.
var orderBy = regexp.MustCompile(`(?is)\border\s+by\s+(.+?)(?:\s+limit\b|\s+offset\b|\s+for\s+(?:update|share|no|key)\b|\s+fetch\b|;|\)|$)`)

func (r tempSpill) finding(run *timeline.Run, s spillStretch) diagnose.Finding {
	tick := diagnose.Tick(run)
	span := s.To - s.From
	rate := s.Bytes / math.Max(span, tick)
	workMem := settingAt(run, "work_mem", s.From, "4MB")
	f := diagnose.Finding{Severity: diagnose.Warning, Start: s.From, End: s.To}
	f.Evidence = append(f.Evidence,
		diagnose.Evidence{Series: pgmetric.Series(pgmetric.Database, pgmetric.TempFiles), T: s.To, Value: s.Files,
			Text: fmt.Sprintf("%s temporary files created between %.0f s and %.0f s (%s/s)", formatCount(s.Files), s.From, s.To,
				formatRate(s.Files/math.Max(span, tick)))},
		diagnose.Evidence{Series: pgmetric.Series(pgmetric.Database, pgmetric.TempBytes), T: s.PeakT, Value: rate,
			Text: fmt.Sprintf("%s written to temporary files, %s/s on average (peak %s in the interval ending at %.0f s); work_mem is %s",
				diagnose.HumanBytes(s.Bytes), diagnose.HumanBytes(rate), diagnose.HumanBytes(s.PeakBytes), s.PeakT, workMem)})
	perFile := 0.0
	if s.Files > 0 {
		perFile = s.Bytes / s.Files
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Database, pgmetric.TempBytes), T: s.LargestFileT, Value: perFile,
			Text: fmt.Sprintf("%s per temporary file on average (temp_bytes ÷ temp_files), the largest %s (in the interval ending at %.0f s): what one sort or hash put on disk",
				diagnose.HumanBytes(perFile), diagnose.HumanBytes(s.LargestFile), s.LargestFileT)})
	}
	sps := spillers(run, s.From, s.To)
	f.Headline = fmt.Sprintf("Queries spill to temporary files: %s/s written to disk (%s files) since %.0f s, past work_mem %s",
		diagnose.HumanBytes(rate), formatCount(s.Files), s.From, workMem)
	f.Mechanism = "A sort (ORDER BY, DISTINCT, merge joins) or a hash (hash joins and aggregates) may use work_mem " +
		"(× hash_mem_multiplier for hashes) per node; past that it writes its rows to temporary files and reads them back, " +
		"several passes for a large sort. Every call then pays disk writes and reads that an in-memory sort would not, and " +
		"concurrent calls compete for the same disk."
	remedy := []string{}
	if len(sps) > 0 {
		top := sps[0]
		where := ""
		if top.stat.workload != "" {
			where = fmt.Sprintf(" (workload %s, %s)", top.stat.workload, top.stat.where)
			f.Workload = top.stat.workload
		}
		f.Headline += fmt.Sprintf("; `%s`%s spills", diagnose.OneLine(top.stat.Query, 120), where)
		if perFile > 0 {
			f.Headline += fmt.Sprintf(" %s per temporary file", diagnose.HumanBytes(perFile))
		}
		for i, sp := range sps {
			if i == 3 {
				break
			}
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Statements, sp.stat.QueryID), Value: sp.perCall(),
				Text: fmt.Sprintf("`%s`: %s temporary blocks written over %s calls, %s per call (temp_blks_written: every merge pass counted again)", diagnose.OneLine(sp.stat.Query, 100),
					formatCount(sp.tempBlocks), formatCount(sp.calls), diagnose.HumanBytes(sp.perCall()))})
		}
		// An in-memory sort needs more than its rows' size on disk (tuple
		// headers, the sort's array): twice the largest single spill is a
		// safe start. Without temp_files, the statement's blocks per call
		// (an overestimate: merge passes counted again).
		largest := s.LargestFile
		if largest <= 0 {
			largest = top.perCall()
		}
		need := pgSize(2 * largest)
		remedy = append(remedy, fmt.Sprintf("Give that statement the memory it needs, not the whole server: its largest spill is %s, "+
			"so `SET LOCAL work_mem = '%s'` in the transaction that runs it, or `ALTER ROLE <its role> SET work_mem = '%s'` for a "+
			"reporting role (work_mem is per sort or hash node and per session: %s × the sessions running it at once must fit in RAM; "+
			"a sort with LIMIT keeps only its top rows in memory and may need far less: try smaller first).",
			diagnose.HumanBytes(largest), need, need, need))
		if m := orderBy.FindStringSubmatch(top.stat.Query); m != nil && volatileSort.MatchString(m[1]) {
			fn := volatileSort.FindStringSubmatch(m[1])[1]
			remedy = append(remedy, fmt.Sprintf("No index can serve its sort (ORDER BY %s(): a new order on every call); to pick random rows "+
				"without sorting them all, use TABLESAMPLE SYSTEM or draw random ids and fetch them by key.", strings.ToLower(fn)))
		} else if m != nil {
			remedy = append(remedy, fmt.Sprintf("Or avoid the sort: an index whose leading columns are the query's equality "+
				"filters followed by its ORDER BY keys (%s) hands the rows over in order, with no sort to spill; check with "+
				"EXPLAIN that the plan has no Sort node.", strings.TrimSpace(m[1])))
		}
	} else {
		remedy = append(remedy, "Find the statements with `SELECT query, calls, temp_blks_written FROM pg_stat_statements "+
			"ORDER BY temp_blks_written DESC LIMIT 10` (or set log_temp_files = 0 to log each file with its statement), then give "+
			"them work_mem with `SET LOCAL work_mem` in their transaction or per role, sized from temp_blks_written × 8 kB ÷ calls.")
	}
	remedy = append(remedy, "Raising work_mem for the whole server multiplies by every session and every sort node in it: "+
		"prefer the statement or its role.")
	f.Remedy = strings.Join(remedy, " ")
	f.References = []string{
		"https://www.postgresql.org/docs/current/runtime-config-resource.html#GUC-WORK-MEM",
		"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-DATABASE-VIEW",
		"https://www.postgresql.org/docs/current/pgstatstatements.html",
		"https://www.postgresql.org/docs/current/runtime-config-logging.html#GUC-LOG-TEMP-FILES",
		"https://docs.aws.amazon.com/AmazonRDS/latest/UserGuide/PostgreSQL.ManagingTempFiles.Example.html",
	}
	return f
}
