package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// xminHorizonHeld finds a transaction, prepared transaction or replication
// slot that pins the xmin horizon long enough for dead row versions to
// pile up where vacuum cannot remove them.
type xminHorizonHeld struct{}

var _ diagnose.Rule = xminHorizonHeld{}

// Thresholds of xmin-horizon-held: the mechanism, not a drill's numbers.
const (
	// horizonMinHoldS is how long the horizon must stay put. At OLTP
	// rates 15 s already leaves thousands of dead rows (deadMinGrowth)
	// that no vacuum can remove until the holder ends, and the multixact
	// incident's cost showed within the first minute of its hold; a
	// shorter hold is one slow request. It was 30 s (autovacuum's nap is
	// 1 min): that put the first warning 30 s after the hold began,
	// twice the 15 s the live stream aims for (diagnose/README.md).
	horizonMinHoldS = 15
	// horizonMinAge and horizonAgeFactor: the age must be well beyond what
	// the run's own short transactions produce (its typical age outside
	// holds), and beyond a trickle of transactions.
	horizonMinAge    = 1000
	horizonAgeFactor = 10
	// deadMinGrowth is how many dead rows a table must gain during the hold
	// to count as piling up.
	deadMinGrowth = 1000
	// holdStartVacuumTicks: a vacuum reported this many ticks after the
	// hold's start may have begun before it. The start is known to a tick
	// (the age's last standstill), the holder may take its xid up to a
	// tick later, and a vacuum's count appears on the first sample after
	// it ends; the half tick absorbs the samplers' jitter.
	holdStartVacuumTicks = 2.5
)

func (xminHorizonHeld) ID() string { return "xmin-horizon-held" }

// Inputs names the sources the rule reads.
func (xminHorizonHeld) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.XminHorizon, pgmetric.Activity}, Also: []string{pgmetric.UserTables}}
}

func (r xminHorizonHeld) Check(run *timeline.Run) []diagnose.Finding {
	holds := horizonHolds(run, horizonMinHoldS)
	if len(holds) == 0 {
		return nil
	}
	typical := typicalHorizonAge(run, holds)
	var out []diagnose.Finding
	for _, h := range holds {
		if h.EndAge < horizonMinAge || h.EndAge < horizonAgeFactor*typical {
			continue
		}
		tables, haveTables := deadTupleGrowth(run, h.Start, h.End)
		if haveTables && len(tables) == 0 {
			continue // nothing was updated or deleted: a harmless hold
		}
		out = append(out, r.finding(run, h, typical, tables))
	}
	return out
}

func (r xminHorizonHeld) finding(run *timeline.Run, h horizonHold, typical float64, tables []deadGrowth) diagnose.Finding {
	holder, known := findHolder(run, h)
	f := diagnose.Finding{Rule: r.ID(), Severity: diagnose.Warning, Start: h.Start, End: h.End}
	who := "Something"
	if known {
		who = "One " + holder.describe()
		if w, ok := workloadOfApp(run, holder.App); ok {
			f.Workload = w
		}
	}
	headline := fmt.Sprintf("%s held back the xmin horizon for %s (age %s → %s xids)",
		who, diagnose.SecondsText(h.Duration()), formatCount(h.StartAge), formatCount(h.EndAge))
	switch {
	case h.EndedBeforeRunEnds:
	case run.Manifest.Status == timeline.StatusRunning: // a live pass: the run goes on
		headline += fmt.Sprintf(", still held at %.0f s", h.End)
	default:
		headline += ", still held when the run ended"
	}
	if len(tables) > 0 {
		t := tables[0]
		headline += fmt.Sprintf("; dead rows in %s piled up %s → %s", t.Table, formatCount(t.StartDead), formatCount(t.PeakDead))
		if t.Vacuums > 0 {
			headline += fmt.Sprintf(" although autovacuum ran %d×", t.Vacuums)
		} else {
			headline += ", vacuum could not remove them"
		}
	}
	f.Headline = headline

	f.Evidence = append(f.Evidence,
		diagnose.Evidence{Series: h.Series, T: h.Start, Value: h.StartAge,
			Text: fmt.Sprintf("horizon age %s xids when it stopped moving (typical in this run: %s xids)", formatCount(h.StartAge), formatCount(typical))},
		diagnose.Evidence{Series: h.Series, T: h.End, Value: h.EndAge,
			Text: fmt.Sprintf("horizon age %s xids after growing without a drop for %s", formatCount(h.EndAge), diagnose.SecondsText(h.Duration()))})
	if known {
		f.Evidence = append(f.Evidence, holderEvidence(holder))
	}
	if st := diagnose.Over(run.Series(pgmetric.Activity, pgmetric.OldestXactAgeS), h.Start, h.End+diagnose.Tick(run)); st.N > 0 && st.Max > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Activity, pgmetric.OldestXactAgeS), T: st.MaxT, Value: st.Max,
			Text: fmt.Sprintf("oldest open transaction %s", diagnose.SecondsText(st.Max))})
	}
	for i, t := range tables {
		if i == 3 {
			break
		}
		f.Evidence = append(f.Evidence,
			diagnose.Evidence{Series: "pg_stat_user_tables:" + t.Key + ".n_dead_tup", T: t.PeakT, Value: t.PeakDead,
				Text: deadRowsText(t)})
		if t.Vacuums > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_user_tables:" + t.Key + ".autovacuum_count", T: t.LastVacuumT, Value: float64(t.Vacuums),
				Text: fmt.Sprintf("%s: %d (auto)vacuum runs during the hold; dead rows after the last one: %s", t.Table, t.Vacuums, formatCount(t.DeadAfterVacuum))})
		}
		if t.PeakDead >= t.Live && t.Live > 0 && t.PeakDead >= 10*deadMinGrowth {
			f.Severity = diagnose.Critical // the table is more garbage than data
		}
	}
	if h.Duration() >= 600 {
		f.Severity = diagnose.Critical
	}

	f.Mechanism = "VACUUM (and HOT pruning) may remove a dead row version only when no open transaction could still see it; " +
		"the oldest transaction or snapshot anywhere in the cluster, the xmin horizon, sets that limit. " +
		"While one transaction stays open, every update and delete leaves garbage that stays: tables and indexes bloat, " +
		"scans step over dead versions, and structures such as pg_multixact and pg_subtrans cannot be truncated."
	remedy := "Find the holder: `SELECT pid, state, xact_start, backend_xid, backend_xmin, left(query, 60) FROM pg_stat_activity " +
		"WHERE backend_xid IS NOT NULL OR backend_xmin IS NOT NULL ORDER BY xact_start`. "
	if known {
		remedy += holder.remedy()
	} else {
		remedy += "End it (`SELECT pg_terminate_backend(pid)`), and bound transactions with idle_in_transaction_session_timeout and statement_timeout."
	}
	f.Remedy = remedy
	f.References = []string{
		"https://www.postgresql.org/docs/current/routine-vacuuming.html#VACUUM-FOR-SPACE-RECOVERY",
		"https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-IDLE-IN-TRANSACTION-SESSION-TIMEOUT",
		"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW",
	}
	return f
}

// deadRowsText describes a table's dead rows over the hold.
func deadRowsText(t deadGrowth) string {
	text := fmt.Sprintf("%s: dead rows %s → %s (%s live)", t.Table, formatCount(t.StartDead), formatCount(t.PeakDead), formatCount(t.Live))
	if t.StartVacuums > 0 && t.DeadBeforeStartVacuum > t.StartDead {
		text += fmt.Sprintf("; a vacuum as the hold began had removed the older ones (%s before it)", formatCount(t.DeadBeforeStartVacuum))
	}
	return text
}

// holderEvidence is the holder as an observation.
func holderEvidence(x xminHolder) diagnose.Evidence {
	ev := diagnose.Evidence{T: x.T, Value: x.XactAgeS}
	switch x.From {
	case "pg_stat_activity":
		ev.Series = "pg_stat_activity:detail"
	case "xmin_horizon":
		ev.Series = "xmin_horizon:detail"
	default:
		ev.Series = x.From
	}
	if x.XactAgeS < 0 {
		ev.Value = x.AgeXIDs
	}
	text := "holder: " + x.describe()
	if x.Event != "" && !strings.HasPrefix(x.From, "event:") {
		text += "; opened by the firedrill event " + x.Event
	}
	ev.Text = text
	return ev
}

// typicalHorizonAge is the median horizon age outside the holds: what the
// run's own transactions keep it at.
func typicalHorizonAge(run *timeline.Run, holds []horizonHold) float64 {
	_, pts := horizonAgeSeries(run)
	var outside []timeline.Point
	for _, p := range pts {
		in := false
		for _, h := range holds {
			if p.T >= h.Start && p.T <= h.End+diagnose.Tick(run) {
				in = true
				break
			}
		}
		if !in {
			outside = append(outside, p)
		}
	}
	return diagnose.Median(outside, -1, diagnose.RunEnd(run)+1)
}

// deadGrowth is one table's dead rows over a window.
type deadGrowth struct {
	Key       string  // schema.table as sampled
	Table     string  // without the schema when it is public
	StartDead float64 // the lowest count as the hold began, after any vacuum at its start
	StartT    float64
	PeakDead  float64 // the highest count after StartT
	PeakT     float64
	Live      float64
	// Vacuums ran during the hold (those at its start not counted);
	// DeadAfterVacuum is the lowest count after the last one.
	Vacuums         int
	LastVacuumT     float64
	DeadAfterVacuum float64
	// StartVacuums ran as the hold began and may have removed what died
	// before it (DeadBeforeStartVacuum): they say nothing about the hold.
	StartVacuums          int
	DeadBeforeStartVacuum float64
}

// vacuumRun is a sample that reports (auto)vacuums ended in its interval.
type vacuumRun struct {
	T float64
	N int
}

// vacuumRuns lists the table's vacuums (manual and auto) reported in
// [from, to], in time order.
func vacuumRuns(run *timeline.Run, table string, from, to float64) []vacuumRun {
	byT := map[float64]int{}
	for _, kind := range []string{".autovacuum_count", ".vacuum_count"} {
		for _, p := range run.Series(pgmetric.UserTables, table+kind) {
			if p.T >= from && p.T <= to && p.V > 0 {
				byT[p.T] += int(p.V)
			}
		}
	}
	out := make([]vacuumRun, 0, len(byT))
	for t, n := range byT {
		out = append(out, vacuumRun{T: t, N: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out
}

// deadTupleGrowth lists the tables whose dead rows grew over [from, to],
// most first; ok is false when the run has no table statistics at all.
//
// A vacuum reported within holdStartVacuumTicks of the hold's start may
// have taken its cutoff before the horizon was held, and then removes the
// dead rows of before the hold: growth is judged from the lowest count
// after it, not from the count before it. A vacuum later in the hold
// shows that the dead rows were not held back when it removed most of
// what had piled up since then.
func deadTupleGrowth(run *timeline.Run, from, to float64) ([]deadGrowth, bool) {
	keys := run.Keys(pgmetric.UserTables)
	if len(keys) == 0 {
		return nil, false
	}
	tol := diagnose.Tick(run)
	settle := from + holdStartVacuumTicks*tol
	var out []deadGrowth
	for _, k := range keys {
		table, ok := strings.CutSuffix(k, ".n_dead_tup")
		if !ok {
			continue
		}
		dead := run.Series(pgmetric.UserTables, k)
		vacuums := vacuumRuns(run, table, from-tol/2, to+tol)
		g := deadGrowth{Key: table, Table: strings.TrimPrefix(table, "public.")}
		// The baseline: the lowest count around the hold's start, down to
		// the dip after the vacuums that ran as it began.
		baseEnd := from + tol/2
		var inHold []vacuumRun
		for _, v := range vacuums {
			if v.T <= settle {
				if before := diagnose.Over(dead, from-1.5*tol, v.T); before.N > 0 {
					g.DeadBeforeStartVacuum = max(g.DeadBeforeStartVacuum, before.Max)
				}
				g.StartVacuums += v.N
				baseEnd = max(baseEnd, v.T+tol/2)
			} else {
				inHold = append(inHold, v)
			}
		}
		start := diagnose.Over(dead, from-tol/2, baseEnd)
		if start.N == 0 {
			continue
		}
		g.StartDead, g.StartT = start.Min, start.MinT
		during := diagnose.Over(dead, g.StartT, to+tol)
		if during.N == 0 {
			continue
		}
		g.PeakDead, g.PeakT = during.Max, during.MaxT
		if g.PeakDead-g.StartDead < deadMinGrowth || g.PeakDead < 1.5*g.StartDead {
			continue
		}
		if live := diagnose.Over(run.Series(pgmetric.UserTables, table+".n_live_tup"), from, to+tol); live.N > 0 {
			g.Live = live.Last
		}
		cleaned := false
		for i, v := range inHold {
			g.Vacuums += v.N
			g.LastVacuumT = v.T
			next := to + tol
			if i+1 < len(inHold) {
				next = inHold[i+1].T
			}
			before := diagnose.Over(dead, g.StartT, v.T)
			after := diagnose.Over(dead, v.T, next)
			if after.N > 0 {
				g.DeadAfterVacuum = after.Min
			}
			// Judged only while the hold lasted (later the holder is gone),
			// and only when the hold had piled up rows for it to remove.
			if v.T >= to || before.N == 0 || after.N == 0 || before.Max-g.StartDead < deadMinGrowth {
				continue
			}
			if after.Min-g.StartDead < 0.5*(before.Max-g.StartDead) {
				cleaned = true // vacuum removed what piled up: not held back
			}
		}
		if cleaned {
			continue
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].PeakDead-out[i].StartDead > out[j].PeakDead-out[j].StartDead
	})
	return out, true
}

// workloadOfApp maps a session's application_name to the workload that
// opened it ("firedrill:<workload>", as the runner names them).
func workloadOfApp(run *timeline.Run, app string) (string, bool) {
	for _, w := range run.Manifest.Workloads {
		if app == diagnose.WorkloadApp(w.Name) {
			return w.Name, true
		}
	}
	return "", false
}
