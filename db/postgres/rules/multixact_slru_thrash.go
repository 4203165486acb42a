package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// multixactSLRUThrash finds the MultiXact SLRU caches missing: row locks
// shared between transactions (or between a transaction and its own
// subtransaction) live in pg_multixact, and while the xmin horizon is
// held that structure outgrows its small caches.
type multixactSLRUThrash struct{}

var _ diagnose.Rule = multixactSLRUThrash{}

// multixactCaches are the SLRU caches of pg_multixact, worst reported.
var multixactCaches = []string{pgmetric.MultiXactMember, pgmetric.MultiXactOffset}

func (multixactSLRUThrash) ID() string { return "multixact-slru-thrash" }

// Inputs names the sources the rule reads.
func (multixactSLRUThrash) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.SLRU}, Also: []string{pgmetric.Activity, pgmetric.XminHorizon, pgmetric.Functions, pgmetric.ForeignKeys}}
}

func (r multixactSLRUThrash) Check(run *timeline.Run) []diagnose.Finding {
	var th slruThrash
	found := false
	for _, cache := range multixactCaches {
		if t, ok := findSLRUThrash(run, cache, defaultSLRUThresholds); ok && (!found || t.Worst.HitRate < th.Worst.HitRate) {
			th, found = t, true
		}
	}
	if !found {
		return nil
	}
	return []diagnose.Finding{r.finding(run, th)}
}

func (r multixactSLRUThrash) finding(run *timeline.Run, th slruThrash) diagnose.Finding {
	f := diagnose.Finding{Rule: r.ID(), Severity: diagnose.Warning, Start: th.Onset, End: th.End}
	cacheWords := map[string]string{pgmetric.MultiXactMember: "MultiXact member", pgmetric.MultiXactOffset: "MultiXact offset"}[th.Cache]
	series := pgmetric.SLRU + ":" + th.Cache

	// The cause chain: who holds the horizon, which script makes multixacts.
	var holderText string
	var holder xminHolder
	holderKnown := false
	if h, ok := holdOverlapping(horizonHolds(run, 5*diagnose.Tick(run)), th.Onset, th.End); ok {
		if x, ok := findHolder(run, h); ok {
			holder, holderKnown = x, true
			holderText = "one " + x.describe() + " is holding back vacuum"
			f.Evidence = append(f.Evidence, holderEvidence(x),
				diagnose.Evidence{Series: h.Series, T: h.End, Value: h.EndAge,
					Text: fmt.Sprintf("xmin horizon held for %s, age %s xids", diagnose.SecondsText(h.Duration()), formatCount(h.EndAge))})
		}
	}
	patterns := lockSavepointWrites(savepointScripts(run))
	causes := multixactCauses(run, patterns)

	// Throughput of each workload, before the drop and during it.
	var tputTexts []string
	fell := false
	for _, w := range run.Manifest.Workloads {
		c, ok := throughputChange(run, w.Name, th.BaseFrom, th.Onset, th.End)
		if !ok {
			continue
		}
		tputTexts = append(tputTexts, c.phrase())
		f.Evidence = append(f.Evidence, c.evidence())
		if c.Factor >= 1.25 {
			fell = true
			if f.Workload == "" {
				f.Workload = w.Name
			}
		}
	}
	if f.Workload == "" && len(patterns) > 0 {
		f.Workload = patterns[0].Workload
	}
	if f.Workload == "" && len(causes) > 0 {
		f.Workload = causes[0].Workload
	}
	if th.Worst.HitRate < 0.5 && fell {
		f.Severity = diagnose.Critical
	}

	// Evidence of the cache itself.
	if th.HasBaseline {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: series + ".hit_rate", T: th.Onset, Value: th.BaseHit,
			Text: fmt.Sprintf("%s cache hit rate %s before (%s blocks/s read), pooled over %.0f–%.0f s",
				cacheWords, formatPct(th.BaseHit), formatRate(th.BaseReads), th.BaseFrom, th.Onset)})
	}
	f.Evidence = append(f.Evidence,
		diagnose.Evidence{Series: series + ".hit_rate", T: th.Worst.T, Value: th.Worst.HitRate,
			Text: fmt.Sprintf("%s cache hit rate %s at worst (%d s pooled), %s over the window", cacheWords,
				formatPct(th.Worst.HitRate), slruWindowS, formatPct(th.MeanHit))},
		diagnose.Evidence{Series: series + ".blks_read_per_s", T: th.Worst.T, Value: th.Worst.Reads,
			Text: fmt.Sprintf("%s blocks/s read from pg_multixact at worst, %s on average over the window",
				formatRate(th.Worst.Reads), formatRate(th.MeanReads))})
	if w, ok := waitEvidence(run, th.Onset, th.End, []string{"wait.LWLock:MultiXact", "wait.IO:SLRURead"}); ok {
		f.Evidence = append(f.Evidence, w)
	}
	f.Evidence = append(f.Evidence, causeEvidence(patterns, causes)...)

	// The headline, as the issue shows it: the holder, the cache, the cost.
	var parts []string
	if holderText != "" {
		parts = append(parts, upperFirst(holderText))
	}
	cacheText := fmt.Sprintf("%s cache hit rate fell to %s (%s blocks/s read)", cacheWords,
		formatPct(th.Worst.HitRate), formatRate(th.Worst.Reads))
	if th.HasBaseline {
		cacheText = fmt.Sprintf("%s cache hit rate fell from %s to %s (%s → %s blocks/s read)", cacheWords,
			formatPct(th.BaseHit), formatPct(th.Worst.HitRate), formatRate(th.BaseReads), formatRate(th.Worst.Reads))
	}
	parts = append(parts, cacheText)
	parts = append(parts, tputTexts...)
	if len(patterns) > 0 {
		p := patterns[0]
		parts = append(parts, fmt.Sprintf("%s locks %s rows %s, then updates them inside a SAVEPOINT",
			p.Script, p.Table, p.Lock.Stmt.Lock))
	}
	for i, c := range causes {
		if i == 2 {
			break
		}
		parts = append(parts, c.Phrase)
	}
	headline := strings.Join(parts, "; ")
	if len(parts) > 0 && holderText == "" {
		headline = upperFirst(headline)
	}
	f.Headline = headline

	f.Mechanism = "When a row locked by one transaction is locked or updated by another — including the same " +
		"transaction's own subtransaction (SAVEPOINT, a PL/pgSQL EXCEPTION block, pgJDBC's autosave), or another transaction " +
		"sharing the lock (FOR SHARE, FOR KEY SHARE, a foreign-key check) — its xmax becomes a MultiXactId pointing into pg_multixact, " +
		"read through small SLRU caches behind global LWLocks. While the xmin horizon is held, vacuum cannot truncate " +
		"pg_multixact, so it outgrows the caches: hit rate collapses, reads go to disk and every multixact-touching " +
		"query in the database slows down, including ones on unrelated tables."
	var remedy []string
	if len(patterns) > 0 {
		p := patterns[0]
		remedy = append(remedy, fmt.Sprintf("Take the SAVEPOINT out of %s (no nested transactions: e.g. jOOQ nested=false, "+
			"Spring propagation REQUIRED instead of NESTED), or lock the row in the same (sub)transaction that updates it: "+
			"line %d's `%s` and line %d's `%s` must not be split by `%s`.",
			p.Script, p.Lock.Line, sqlcheck.Shorten(p.Lock.Text, 50), p.Write.Line, sqlcheck.Shorten(p.Write.Text, 50), sqlcheck.Shorten(p.Savepoint.Text, 30)))
	}
	for i, c := range causes {
		if i == 2 {
			break
		}
		remedy = append(remedy, c.Remedy)
	}
	if len(patterns) == 0 && len(causes) == 0 {
		remedy = append(remedy, "Find the statements that share row locks (SELECT … FOR SHARE/KEY SHARE, foreign keys, "+
			"FOR UPDATE followed by an update inside a SAVEPOINT or a PL/pgSQL EXCEPTION block) and avoid the sharing.")
	}
	if holderKnown {
		remedy = append(remedy, holder.remedy())
	} else {
		remedy = append(remedy, "Cap transaction length: `idle_in_transaction_session_timeout = '10s'`, `statement_timeout`.")
	}
	remedy = append(remedy, "Alert on pg_stat_slru: `SELECT name, blks_hit, blks_read FROM pg_stat_slru WHERE name LIKE 'MultiXact%'` "+
		"(a falling hit rate warned minutes before the outage in the original incident); PostgreSQL 17 can enlarge the caches "+
		"with multixact_member_buffers and multixact_offset_buffers.")
	f.Remedy = strings.Join(remedy, " ")
	f.References = []string{
		"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-SLRU-VIEW",
		"https://www.postgresql.org/docs/current/routine-vacuuming.html#VACUUM-FOR-MULTIXACT-WRAPAROUND",
		"https://www.postgresql.org/docs/current/explicit-locking.html#LOCKING-ROWS",
		"https://www.postgresql.org/docs/current/wait-event-table.html",
	}
	return f
}

// lockSavepointWrite is the static pattern behind self-made multixacts: a
// row lock, then a SAVEPOINT, then a write of the same table inside it.
type lockSavepointWrite struct {
	Workload, Script, Table string
	Lock, Savepoint, Write  scriptCommand
}

func (p lockSavepointWrite) evidence() []diagnose.Evidence {
	return []diagnose.Evidence{
		{Series: p.Lock.series(), Text: fmt.Sprintf("%s (workload %s) takes a row lock: `%s`", p.Script, p.Workload, sqlcheck.Shorten(p.Lock.Text, 80))},
		{Series: p.Write.series(), Text: fmt.Sprintf("then inside `%s` writes the same table %s: `%s`",
			sqlcheck.Shorten(p.Savepoint.Text, 40), p.Table, sqlcheck.Shorten(p.Write.Text, 80))},
	}
}

// lockSavepointWrites finds, in each script, a row lock followed inside
// the same transaction by a SAVEPOINT and a write (UPDATE, DELETE, or
// SELECT … FOR UPDATE) of the same table within that savepoint.
func lockSavepointWrites(scripts []workloadScript) []lockSavepointWrite {
	var out []lockSavepointWrite
	for _, ws := range scripts {
		type heldLock struct {
			cmd       scriptCommand
			depth     int
			savepoint *scriptCommand // the first savepoint opened after it, still open
		}
		var locks []heldLock
		inTx, depth := false, 0
		found := map[string]bool{}
		for _, c := range ws.Commands {
			st := c.Stmt
			switch st.Kind {
			case sqlcheck.StmtBegin:
				inTx, depth, locks = true, 0, nil
				continue
			case sqlcheck.StmtEnd:
				inTx, depth, locks = false, 0, nil
				continue
			case sqlcheck.StmtSavepoint:
				if !inTx {
					continue
				}
				depth++
				for i := range locks {
					if locks[i].savepoint == nil && depth > locks[i].depth {
						sp := c
						locks[i].savepoint = &sp
					}
				}
				continue
			case sqlcheck.StmtRelease, sqlcheck.StmtRollbackTo:
				if st.Kind == sqlcheck.StmtRelease && depth > 0 {
					depth--
				}
				for i := range locks {
					if locks[i].savepoint != nil && depth <= locks[i].depth {
						locks[i].savepoint = nil // back at the lock's own level
					}
				}
				continue
			case sqlcheck.StmtMeta, sqlcheck.StmtOther:
				continue
			}
			if !inTx {
				continue
			}
			for _, l := range locks {
				if l.savepoint == nil {
					continue
				}
				for _, table := range l.cmd.Stmt.Locked {
					if st.WritesRow(table) && !found[table] {
						found[table] = true
						out = append(out, lockSavepointWrite{Workload: ws.Workload, Script: ws.Script, Table: table,
							Lock: l.cmd, Savepoint: *l.savepoint, Write: c})
					}
				}
			}
			if len(st.Locked) > 0 {
				locks = append(locks, heldLock{cmd: c, depth: depth})
			}
		}
	}
	return out
}

// throughputShift is a workload's throughput before and during a window.
type throughputShift struct {
	Workload       string
	Before, During float64 // transactions/s
	BeforeT        float64
	DuringT        float64
	Factor         float64 // Before/During: 2 means it halved
}

// throughputChange compares a workload's throughput over [from, onset)
// with [onset, end); ok is false when either side has no whole interval.
func throughputChange(run *timeline.Run, workload string, from, onset, end float64) (throughputShift, bool) {
	ivs := run.WorkloadIntervals(workload)
	if len(ivs) == 0 {
		return throughputShift{}, false
	}
	// Leave the workload's first second out of the baseline: connections
	// and prepared statements warm up.
	from = max(from, ivs[0].Start+1)
	before := diagnose.Throughput(run, workload, from, onset)
	during := diagnose.Throughput(run, workload, onset, end)
	if before <= 0 || end-onset < 2*diagnose.Tick(run) || onset-from < 2*diagnose.Tick(run) {
		return throughputShift{}, false
	}
	c := throughputShift{Workload: workload, Before: before, During: during, BeforeT: onset, DuringT: end, Factor: 100}
	if during > 0 {
		c.Factor = before / during
	}
	return c, true
}

func (c throughputShift) phrase() string {
	switch {
	case c.During == 0:
		return fmt.Sprintf("throughput of %s fell to zero", c.Workload)
	case c.Factor >= 1.1:
		return fmt.Sprintf("throughput of %s fell %.1f×", c.Workload, c.Factor)
	case c.Factor <= 1/1.1:
		return fmt.Sprintf("throughput of %s rose %.1f×", c.Workload, 1/c.Factor)
	}
	return fmt.Sprintf("throughput of %s held (%s → %s tx/s)", c.Workload, formatRate(c.Before), formatRate(c.During))
}

func (c throughputShift) evidence() diagnose.Evidence {
	return diagnose.Evidence{Series: "workload:" + c.Workload + ".tps", T: c.DuringT, Value: c.During,
		Text: fmt.Sprintf("%s: %s tx/s before, %s tx/s during", c.Workload, formatRate(c.Before), formatRate(c.During))}
}

// waitEvidence reports the busiest of the wait events whose key starts
// with one of prefixes over [from, to]; ok is false when none was seen.
func waitEvidence(run *timeline.Run, from, to float64, prefixes []string) (diagnose.Evidence, bool) {
	totals := map[string]float64{}
	peakT := map[string]float64{}
	peak := map[string]float64{}
	samples := 0
	for _, s := range run.SourceSamples(pgmetric.Activity) {
		if s.T < from || s.T > to || s.Error != "" {
			continue
		}
		samples++
		for k, v := range s.Values {
			for _, p := range prefixes {
				if strings.HasPrefix(strings.ToLower(k), strings.ToLower(p)) && v > 0 {
					totals[k] += v
					if v > peak[k] {
						peak[k], peakT[k] = v, s.T
					}
				}
			}
		}
	}
	best := ""
	for k, v := range totals {
		if best == "" || v > totals[best] || v == totals[best] && k < best {
			best = k
		}
	}
	if best == "" || samples == 0 {
		return diagnose.Evidence{}, false
	}
	var others []string
	for k := range totals {
		if k != best {
			others = append(others, strings.TrimPrefix(k, "wait."))
		}
	}
	text := fmt.Sprintf("%s: %.2f sessions on average (peak %.0f) over %d samples", strings.TrimPrefix(best, "wait."),
		totals[best]/float64(samples), peak[best], samples)
	if len(others) > 0 {
		text += "; also " + strings.Join(sortedStrings(others), ", ")
	}
	return diagnose.Evidence{Series: "pg_stat_activity:" + best, T: peakT[best], Value: peak[best], Text: text}, true
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// formatRate writes a per-second figure: "12.9k", "340", "2.5".
func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10000:
		return fmt.Sprintf("%.1fk", v/1000)
	case v >= 100:
		return formatCount(v)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func upperFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}
