package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// subtransactionOverflow finds snapshots going to pg_subtrans: a backend
// keeps the xids of at most 64 subtransactions in shared memory; past
// that its cache overflows and every snapshot taken meanwhile must look
// up pg_subtrans for any xid newer than its xmin. A long transaction
// makes that range, and the lookups, large.
type subtransactionOverflow struct{}

var _ diagnose.Rule = subtransactionOverflow{}

// pgprocMaxCachedSubxids is PGPROC_MAX_CACHED_SUBXIDS: the subtransaction
// xids a backend shows in shared memory before its cache overflows.
const pgprocMaxCachedSubxids = 64

// Thresholds of subtransaction-overflow.
const (
	// subtransSurgeFactor: pg_subtrans lookups (hits + reads) this many times
	// the run's own baseline mean snapshots go there.
	subtransSurgeFactor = 10
	// subtransMinAccess is the floor of a surge, blocks/s.
	subtransMinAccess = 1000
	// longTxS is how long a transaction must be open to count as long.
	longTxS = 10
)

func (subtransactionOverflow) ID() string { return "subtransaction-overflow" }

// Inputs names the sources the rule reads: none is needed, since the
// script check (savepoints per transaction) concludes from the scripts.
func (subtransactionOverflow) Inputs() diagnose.Inputs {
	return diagnose.Inputs{Also: []string{pgmetric.SLRU, pgmetric.Activity, pgmetric.XminHorizon, pgmetric.Functions}}
}

// subtransSignal is what the server showed of the overflow.
type subtransSignal struct {
	From, To  float64
	Thrash    *slruThrash        // the hit rate collapsed
	Misses    *slruPoint         // reads (misses) far above the baseline: the lookups outgrew the cache
	BaseReads float64            // baseline reads, blocks/s
	Surge     *slruPoint         // lookups far above the baseline (hits, mostly)
	BaseAcc   float64            // baseline lookups, blocks/s
	Waits     *diagnose.Evidence // Subtrans LWLock waits
}

func (r subtransactionOverflow) Check(run *timeline.Run) []diagnose.Finding {
	var deep []deepScript
	for _, d := range deepSubtransactions(savepointScripts(run)) {
		if workloadRan(run, d.Workload) {
			deep = append(deep, d)
		}
	}
	sig, ok := subtransRuntime(run)
	if ok {
		return []diagnose.Finding{r.runtimeFinding(run, sig, deep)}
	}
	if len(deep) > 0 {
		return []diagnose.Finding{r.staticFinding(run, deep)}
	}
	return nil
}

// subtransRuntime looks for the server-side signs while a long
// transaction is open: pg_subtrans missing its cache (reads up, hit rate
// down), lookups surging against the run's own baseline, LWLock waits.
func subtransRuntime(run *timeline.Run) (subtransSignal, bool) {
	holds := horizonHolds(run, longTxS)
	activity := run.Series(pgmetric.Activity, pgmetric.OldestXactAgeS)
	longOpen := func(from, to float64) bool {
		if _, ok := holdOverlapping(holds, from, to); ok {
			return true
		}
		st := diagnose.Over(activity, from, to+diagnose.Tick(run))
		return st.N > 0 && st.Max >= longTxS
	}
	// The baseline is the run before any long transaction.
	baseEnd := diagnose.RunEnd(run)
	if len(holds) > 0 {
		baseEnd = holds[0].Start
	}
	for _, p := range activity {
		if p.V >= longTxS {
			baseEnd = math.Min(baseEnd, p.T-p.V)
			break
		}
	}
	var sig subtransSignal
	found := false
	widen := func(from, to float64) {
		if !found {
			sig.From, sig.To, found = from, to, true
			return
		}
		sig.From, sig.To = math.Min(sig.From, from), math.Max(sig.To, to)
	}
	if th, ok := findSLRUThrash(run, "Subtrans", defaultSLRUThresholds); ok && longOpen(th.Onset, th.End) {
		sig.Thrash = &th
		widen(th.Onset, th.End)
	}
	pts := slruRolling(run, "Subtrans")
	reads := func(p slruPoint) float64 { return p.Reads }
	access := func(p slruPoint) float64 { return p.Access }
	if peak, base, from, to, ok := slruSurge(pts, baseEnd, reads, defaultSLRUThresholds.ReadFactor, defaultSLRUThresholds.MinReads); ok && longOpen(from, to) {
		sig.Misses, sig.BaseReads = &peak, base
		widen(from, to)
	}
	if peak, base, from, to, ok := slruSurge(pts, baseEnd, access, subtransSurgeFactor, subtransMinAccess); ok && base > 0 && longOpen(from, to) {
		sig.Surge, sig.BaseAcc = &peak, base
		widen(from, to)
	}
	from, to := 0.0, diagnose.RunEnd(run)
	if found {
		from, to = sig.From, sig.To
	}
	if w, ok := waitEvidence(run, from, to, []string{"wait.LWLock:Subtrans"}); ok {
		// Waits alone count only when seen on more than one tick.
		ticks := 0
		var first, last float64
		for _, p := range diagnose.SumSeries(run, pgmetric.Activity, "wait.LWLock:Subtrans", "") {
			if p.T >= from && p.T <= to && p.V > 0 {
				if ticks == 0 {
					first = p.T
				}
				last = p.T
				ticks++
			}
		}
		if found || ticks >= 2 && longOpen(first, last) {
			sig.Waits = &w
			widen(math.Max(0, first-diagnose.Tick(run)), last)
		}
	}
	return sig, found
}

// slruSurge finds pooled SLRU points after baseEnd where value is at
// least factor times its median before baseEnd and at least floor, for
// two pooling windows or more: the peak, the baseline, and the stretch.
func slruSurge(pts []slruPoint, baseEnd float64, value func(slruPoint) float64, factor, floor float64) (peak slruPoint, base, from, to float64, ok bool) {
	var before []timeline.Point
	for _, p := range pts {
		if p.T < baseEnd {
			before = append(before, timeline.Point{T: p.T, V: value(p)})
		}
	}
	base = diagnose.Median(before, -1, baseEnd)
	found := false
	for _, p := range pts {
		if p.T < baseEnd || value(p) < floor || value(p) < factor*base {
			continue
		}
		if !found {
			from = math.Max(0, p.T-slruWindowS)
		}
		to = p.T
		if !found || value(p) > value(peak) {
			peak = p
		}
		found = true
	}
	return peak, base, from, to, found && to-from >= 2*slruWindowS
}

// slruAccess is the access rate of pooled SLRU points as a series.
func slruAccess(pts []slruPoint) []timeline.Point {
	out := make([]timeline.Point, len(pts))
	for i, p := range pts {
		out[i] = timeline.Point{T: p.T, V: p.Access}
	}
	return out
}

func (r subtransactionOverflow) runtimeFinding(run *timeline.Run, sig subtransSignal, deep []deepScript) diagnose.Finding {
	f := diagnose.Finding{Rule: r.ID(), Severity: diagnose.Warning, Start: sig.From, End: sig.To}
	var parts []string
	// The long transaction that makes the range of xids to look up wide.
	if h, ok := holdOverlapping(horizonHolds(run, longTxS), sig.From, sig.To); ok {
		if x, ok := findHolder(run, h); ok {
			parts = append(parts, fmt.Sprintf("While one %s held the xmin horizon (%s xids)", x.describe(), formatCount(h.EndAge)))
			f.Evidence = append(f.Evidence, holderEvidence(x))
		} else {
			parts = append(parts, fmt.Sprintf("While the xmin horizon was held for %s (%s xids)", diagnose.SecondsText(h.Duration()), formatCount(h.EndAge)))
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: h.Series, T: h.End, Value: h.EndAge,
			Text: fmt.Sprintf("xmin horizon held for %s: %s xids between the oldest snapshot's xmin and the newest", diagnose.SecondsText(h.Duration()), formatCount(h.EndAge))})
	} else if st := diagnose.Over(run.Series(pgmetric.Activity, pgmetric.OldestXactAgeS), sig.From, sig.To+diagnose.Tick(run)); st.N > 0 {
		parts = append(parts, fmt.Sprintf("While a transaction was open for %s", diagnose.SecondsText(st.Max)))
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Activity, pgmetric.OldestXactAgeS), T: st.MaxT, Value: st.Max,
			Text: fmt.Sprintf("oldest open transaction %s", diagnose.SecondsText(st.Max))})
	}
	// One baseline of reads for the headline and the evidence: the cache
	// thrash's, pooled before its onset, when it has one (the surge's own
	// baseline may end elsewhere and read "0 before" beside a headline of
	// "122 → 40.9k blocks/s", issue 26).
	baseReads := sig.BaseReads
	if sig.Thrash != nil && sig.Thrash.HasBaseline {
		baseReads = sig.Thrash.BaseReads
	}
	var signs []string
	if sig.Surge != nil {
		signs = append(signs, fmt.Sprintf("pg_subtrans lookups rose %.0f× (%s → %s blocks/s)",
			sig.Surge.Access/sig.BaseAcc, formatRate(sig.BaseAcc), formatRate(sig.Surge.Access)))
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_slru:Subtrans.blks_hit_per_s", T: sig.Surge.T, Value: sig.Surge.Access,
			Text: fmt.Sprintf("pg_subtrans pages looked up: %s blocks/s (%d s pooled) against %s blocks/s before the long transaction",
				formatRate(sig.Surge.Access), slruWindowS, formatRate(sig.BaseAcc))})
	}
	switch {
	case sig.Thrash != nil:
		th := sig.Thrash
		text := fmt.Sprintf("the Subtrans cache hit rate fell to %s (%s blocks/s read)", formatPct(th.Worst.HitRate), formatRate(th.Worst.Reads))
		if th.HasBaseline {
			text = fmt.Sprintf("the Subtrans cache hit rate fell from %s to %s (%s → %s blocks/s read)", formatPct(th.BaseHit),
				formatPct(th.Worst.HitRate), formatRate(th.BaseReads), formatRate(th.Worst.Reads))
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_slru:Subtrans.hit_rate", T: th.Onset, Value: th.BaseHit,
				Text: fmt.Sprintf("Subtrans hit rate %s before, %s blocks/s read", formatPct(th.BaseHit), formatRate(th.BaseReads))})
		}
		signs = append(signs, text)
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_slru:Subtrans.hit_rate", T: th.Worst.T, Value: th.Worst.HitRate,
			Text: fmt.Sprintf("Subtrans hit rate %s at worst (%d s pooled)", formatPct(th.Worst.HitRate), slruWindowS)})
	case sig.Misses != nil:
		who := "they" // the lookups just named
		if sig.Surge == nil {
			who = "pg_subtrans lookups"
		}
		signs = append(signs, fmt.Sprintf("%s outgrew its cache: %s → %s blocks/s read from disk (hit rate %s)",
			who, formatRate(baseReads), formatRate(sig.Misses.Reads), formatPct(sig.Misses.HitRate)))
	}
	if sig.Misses != nil {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_slru:Subtrans.blks_read_per_s", T: sig.Misses.T, Value: sig.Misses.Reads,
			Text: fmt.Sprintf("%s blocks/s read from pg_subtrans at worst (%d s pooled), %s before the long transaction; hit rate then %s",
				formatRate(sig.Misses.Reads), slruWindowS, formatRate(baseReads), formatPct(sig.Misses.HitRate))})
	}
	if sig.Waits != nil {
		f.Evidence = append(f.Evidence, *sig.Waits)
		signs = append(signs, "sessions waited on "+strings.TrimPrefix(sig.Waits.Series, "pg_stat_activity:wait."))
	}
	if len(signs) > 0 {
		if len(parts) > 0 {
			parts[0] += ", " + signs[0]
		} else {
			parts = append(parts, upperFirst(signs[0]))
		}
		parts = append(parts, signs[1:]...)
	}
	fell := false
	for _, w := range run.Manifest.Workloads {
		from := 0.0
		if sig.Thrash != nil {
			from = sig.Thrash.BaseFrom
		}
		c, ok := throughputChange(run, w.Name, from, sig.From, sig.To)
		if !ok || c.Factor < 1.25 {
			continue
		}
		fell = true
		parts = append(parts, c.phrase())
		f.Evidence = append(f.Evidence, c.evidence())
		if f.Workload == "" {
			f.Workload = w.Name
		}
	}
	if len(deep) > 0 {
		d := deep[0]
		parts = append(parts, fmt.Sprintf("script %s opens %d subtransactions with xids per transaction (a backend caches %d)",
			d.Script, d.WithXID, pgprocMaxCachedSubxids))
		if d.FirstSavepoint.Stmt.Savepoint == pgjdbcAutosave {
			parts[len(parts)-1] += " — pgJDBC's autosave sets a SAVEPOINT before every statement"
		}
		f.Evidence = append(f.Evidence, d.evidence())
		if f.Workload == "" {
			f.Workload = d.Workload
		}
	}
	calls := subxactCalls(run)
	for i, c := range calls {
		if i == 2 {
			break
		}
		parts = append(parts, c.phrase())
		f.Evidence = append(f.Evidence, c.evidence())
		if f.Workload == "" {
			f.Workload = c.Workload
		}
	}
	if sig.Thrash != nil && sig.Thrash.Worst.HitRate < 0.5 && fell {
		f.Severity = diagnose.Critical
	}
	f.Headline = upperFirst(strings.Join(parts, "; "))
	f.Mechanism = mechanismSubtrans
	f.Remedy = remedySubtrans(deep)
	if len(calls) > 0 {
		f.Remedy = fmt.Sprintf("In %s, take the BEGIN … EXCEPTION block out of the loop (check for the error before writing, "+
			"or use INSERT … ON CONFLICT instead of catching unique_violation): each entry to such a block is a subtransaction. ",
			fnName(calls[0].Fn.Fn)) + f.Remedy
	}
	if len(deep) > 0 && deep[0].FirstSavepoint.Stmt.Savepoint == pgjdbcAutosave {
		f.Remedy = "Turn pgJDBC's autosave off (autosave=never, the default): it sets a SAVEPOINT before every statement. " + f.Remedy
	}
	f.References = referencesSubtrans
	return f
}

func (r subtransactionOverflow) staticFinding(run *timeline.Run, deep []deepScript) diagnose.Finding {
	d := deep[0]
	f := diagnose.Finding{Rule: r.ID(), Severity: diagnose.Info, Start: 0, End: diagnose.RunEnd(run), Workload: d.Workload}
	f.Headline = fmt.Sprintf("Script %s (workload %s) opens %d subtransactions with xids in one transaction, past the %d a "+
		"backend caches: under any long transaction every snapshot will look them up in pg_subtrans",
		d.Script, d.Workload, d.WithXID, pgprocMaxCachedSubxids)
	for _, x := range deep {
		f.Evidence = append(f.Evidence, x.evidence())
	}
	f.Mechanism = mechanismSubtrans
	f.Remedy = remedySubtrans(deep)
	f.References = referencesSubtrans
	return f
}

var mechanismSubtrans = "Each SAVEPOINT that writes gets its own transaction id; a backend lists at most 64 of them in " +
	"shared memory, and past that its subxid cache overflows. Every snapshot taken while such a transaction runs is marked " +
	"overflowed, and checking whether a row's xid is visible then means looking it up in pg_subtrans for every xid newer " +
	"than the snapshot's xmin — a range a long transaction keeps widening until the lookups miss the small Subtrans SLRU " +
	"cache and serialise on its lock."

var referencesSubtrans = []string{
	"https://www.postgresql.org/docs/current/subxacts.html",
	"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-SLRU-VIEW",
	"https://www.postgresql.org/docs/current/wait-event-table.html",
}

func remedySubtrans(deep []deepScript) string {
	s := "Keep every transaction under 64 writing subtransactions: no SAVEPOINT per row or per call (ORM nested " +
		"transactions, PL/pgSQL EXCEPTION blocks in a loop each open one); batch the writes in one statement, or commit " +
		"in smaller transactions. "
	if len(deep) > 0 {
		d := deep[0]
		s += fmt.Sprintf("In %s, the savepoints from line %d on (%d of them) are the ones to remove. ", d.Script, d.FirstSavepoint.Line, d.Savepoints)
	}
	return s + "End long transactions (`idle_in_transaction_session_timeout`, `statement_timeout`) so the range to look up " +
		"stays small; PostgreSQL 17 can enlarge the cache with subtransaction_buffers."
}

// deepScript is a script whose transaction opens more subtransactions
// with xids than a backend caches.
type deepScript struct {
	Workload, Script string
	Savepoints       int // SAVEPOINT commands in the transaction
	WithXID          int // of those, the ones that write or lock rows (they get an xid)
	Begin            scriptCommand
	FirstSavepoint   scriptCommand
}

func (d deepScript) evidence() diagnose.Evidence {
	return diagnose.Evidence{Series: d.FirstSavepoint.series(), Value: float64(d.WithXID),
		Text: fmt.Sprintf("%s (workload %s): %d SAVEPOINTs in one transaction, %d of them writing (each gets an xid); a backend caches %d",
			d.Script, d.Workload, d.Savepoints, d.WithXID, pgprocMaxCachedSubxids)}
}

// deepSubtransactions counts, statically, the subtransactions each script
// opens between BEGIN and its end (meta commands such as \if are ignored:
// the count is of the text, every branch included). A subtransaction gets
// an xid when it, or one nested in it, writes or locks rows.
func deepSubtransactions(scripts []workloadScript) []deepScript {
	var out []deepScript
	for _, ws := range scripts {
		best := deepScript{}
		type frame struct {
			name   string
			writes bool
		}
		var stack []frame
		inTx := false
		cur := deepScript{Workload: ws.Workload, Script: ws.Script}
		withXID := 0
		finish := func() {
			for _, fr := range stack {
				if fr.writes {
					withXID++
				}
			}
			cur.WithXID = withXID
			if cur.WithXID > best.WithXID {
				best = cur
			}
			stack, withXID = nil, 0
			cur = deepScript{Workload: ws.Workload, Script: ws.Script}
		}
		for _, c := range ws.Commands {
			switch c.Stmt.Kind {
			case sqlcheck.StmtBegin:
				if inTx {
					finish()
				}
				inTx = true
				cur.Begin = c
			case sqlcheck.StmtEnd:
				if inTx {
					finish()
				}
				inTx = false
			case sqlcheck.StmtSavepoint:
				if !inTx {
					continue
				}
				if cur.Savepoints == 0 {
					cur.FirstSavepoint = c
				}
				cur.Savepoints++
				stack = append(stack, frame{name: c.Stmt.Savepoint})
			case sqlcheck.StmtRelease, sqlcheck.StmtRollbackTo:
				i := len(stack) - 1
				for i >= 0 && stack[i].name != c.Stmt.Savepoint {
					i--
				}
				if i < 0 {
					i = len(stack) - 1 // an unknown name: the innermost
				}
				if i < 0 {
					continue
				}
				if c.Stmt.Kind == sqlcheck.StmtRelease {
					// Released subtransactions stay in the cache as the
					// parent's children: they still count.
					for _, fr := range stack[i:] {
						if fr.writes {
							withXID++
						}
					}
					stack = stack[:i]
				} else {
					// Rolled back ones leave the cache; the savepoint
					// itself starts again without an xid.
					stack = stack[:i+1]
					stack[i].writes = false
				}
			default:
				if c.Stmt.LocksOrWrites() {
					for i := range stack {
						stack[i].writes = true
					}
				}
			}
		}
		if inTx {
			finish()
		}
		if best.WithXID > pgprocMaxCachedSubxids {
			out = append(out, best)
		}
	}
	return out
}
