package pgrules

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// multixactCreation warns that MultiXacts are being made faster than the
// MultiXact offset cache can follow while the xmin horizon is held: the
// step before multixact-slru-thrash, seen before the cache misses.
//
// Each new MultiXactId takes one slot in pg_multixact/offsets; the cache
// of that SLRU holds a fixed number of pages. While the horizon is held,
// lookups keep reaching back to the MultiXacts made since the hold began,
// so once more of them exist than the cache's pages span, its hit rate
// falls (on multixact-broken the misses began 2–3 s after the count
// passed the span). The count is the growth of pg_database's
// mxid_age(datminmxid): datminmxid moves only when vacuum freezes
// MultiXacts, so the age grows by exactly the MultiXacts made.
type multixactCreation struct{}

var _ diagnose.Rule = multixactCreation{}

// Thresholds of multixact-creation.
const (
	// mxMinHoldS is how long the horizon must have been seen held. A
	// hold ended within seconds (an idle_in_transaction_session_timeout
	// of 5 s, as on multixact-timeout) leaves a blip of misses at most,
	// and a live warning must be one the final report keeps. The hold is
	// counted from the first sample that sees it: its start is known
	// only to a tick.
	mxMinHoldS = 5
	// mxOffsetBytes is the size of one MultiXactOffset: a page of the
	// cache holds BLCKSZ over it (2,048 at 8 kB).
	mxOffsetBytes = 4
	// mxOffsetBuffersBefore17 is NUM_MULTIXACTOFFSET_BUFFERS, compiled
	// into PostgreSQL up to 16; 17 made it the multixact_offset_buffers
	// setting (default 16 pages).
	mxOffsetBuffersBefore17 = 8
)

func (multixactCreation) ID() string { return "multixact-creation" }

// Inputs names the sources the rule reads.
func (multixactCreation) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.Databases},
		Also: []string{pgmetric.XminHorizon, pgmetric.Activity, pgmetric.Settings, pgmetric.Functions, pgmetric.ForeignKeys}}
}

// mxSpan is how many MultiXacts the offset cache's pages span, and the
// page count and where it came from, for the finding's text.
type mxSpan struct {
	MXIDs  float64
	Pages  int
	Source string
}

// offsetCacheSpan reads the offset cache's size off the server: the
// multixact_offset_buffers setting from PostgreSQL 17, the compiled-in
// 8 pages before; pages of block_size bytes.
func offsetCacheSpan(run *timeline.Run) mxSpan {
	block := float64(pgBlockBytes)
	if b, ok := pgBytes(diagnose.Setting(run, "block_size", ""), 1); ok && b > 0 {
		block = b
	}
	span := mxSpan{Pages: mxOffsetBuffersBefore17, Source: "NUM_MULTIXACTOFFSET_BUFFERS, fixed before PostgreSQL 17"}
	if v := diagnose.Setting(run, "multixact_offset_buffers", ""); v != "" {
		if b, ok := pgBytes(v, block); ok && b >= block {
			span = mxSpan{Pages: int(b / block), Source: "multixact_offset_buffers = " + v}
		}
	} else if n, err := strconv.Atoi(diagnose.Setting(run, "server_version_num", "")); err == nil && n >= 170000 {
		span = mxSpan{Pages: 16, Source: "multixact_offset_buffers' default"}
	}
	span.MXIDs = float64(span.Pages) * block / mxOffsetBytes
	return span
}

// mxGrowth is the MultiXacts made over a stretch of a hold.
type mxGrowth struct {
	From, To         float64
	StartAge, EndAge float64
	Count            float64 // the sum of the age's rises (a drop is vacuum moving datminmxid)
	PassedT          float64 // when Count first reached the span; 0 if it did not
	PassedCount      float64 // Count then
}

// Rate is MultiXacts made per second over the stretch.
func (g mxGrowth) Rate() float64 {
	if g.To <= g.From {
		return 0
	}
	return g.Count / (g.To - g.From)
}

// mxGrowthOver counts the MultiXacts made over [from, to] from the
// mxid_age points, and when the count reached span.
func mxGrowthOver(pts []timeline.Point, from, to, span float64) (mxGrowth, bool) {
	g := mxGrowth{}
	var prev *timeline.Point
	for i := range pts {
		p := pts[i]
		if p.T < from || p.T > to {
			continue
		}
		if prev == nil {
			g.From, g.StartAge = p.T, p.V
		} else if p.V > prev.V {
			g.Count += p.V - prev.V
			if g.PassedT == 0 && g.Count >= span {
				g.PassedT, g.PassedCount = p.T, g.Count
			}
		}
		g.To, g.EndAge = p.T, p.V
		prev = &pts[i]
	}
	return g, prev != nil && g.To > g.From
}

func (r multixactCreation) Check(run *timeline.Run) []diagnose.Finding {
	ages := run.Series(pgmetric.Databases, "mxid_age")
	if len(ages) < 2 {
		return nil
	}
	span := offsetCacheSpan(run)
	tol := diagnose.Tick(run) / 2
	_, horizon := horizonAgeSeries(run)
	var out []diagnose.Finding
	for _, h := range horizonHolds(run, mxMinHoldS) {
		// The first sample that sees the horizon held.
		seen := h.End
		for _, p := range horizon {
			if p.T > h.Start {
				seen = p.T
				break
			}
		}
		if h.End-seen < mxMinHoldS-tol {
			continue
		}
		g, ok := mxGrowthOver(ages, seen-tol, h.End+tol, span.MXIDs)
		if !ok || g.PassedT == 0 {
			continue
		}
		out = append(out, r.finding(run, h, g, span))
	}
	return out
}

func (r multixactCreation) finding(run *timeline.Run, h horizonHold, g mxGrowth, span mxSpan) diagnose.Finding {
	f := diagnose.Finding{Rule: r.ID(), Severity: diagnose.Warning, Start: h.Start, End: h.End}
	ageSeries := pgmetric.Series(pgmetric.Databases, "mxid_age")
	who := "something"
	holder, known := findHolder(run, h)
	if known {
		who = "one " + holder.describe()
	}
	headline := fmt.Sprintf("MultiXacts are being made at %s/s while %s holds the xmin horizon: %s since the hold began "+
		"(mxid age %s → %s), past the %s that the MultiXact offset cache's %d pages hold",
		formatRate(g.Rate()), who, formatCount(g.Count), formatCount(g.StartAge), formatCount(g.EndAge),
		formatCount(span.MXIDs), span.Pages)

	patterns := lockSavepointWrites(savepointScripts(run))
	causes := multixactCauses(run, patterns)
	if len(patterns) > 0 {
		p := patterns[0]
		headline += fmt.Sprintf("; %s locks %s rows %s, then updates them inside a SAVEPOINT", p.Script, p.Table, p.Lock.Stmt.Lock)
		f.Workload = p.Workload
	}
	for i, c := range causes {
		if i == 2 {
			break
		}
		if i == 0 || len(patterns) == 0 {
			headline += "; " + c.Phrase
		}
		if f.Workload == "" {
			f.Workload = c.Workload
		}
	}
	if f.Workload == "" && known {
		if w, ok := workloadOfApp(run, holder.App); ok {
			f.Workload = w
		}
	}
	f.Headline = headline

	f.Evidence = append(f.Evidence,
		diagnose.Evidence{Series: ageSeries, T: g.From, Value: g.StartAge,
			Text: fmt.Sprintf("mxid age %s when the hold was first seen", formatCount(g.StartAge))},
		diagnose.Evidence{Series: ageSeries, T: g.PassedT, Value: g.PassedCount,
			Text: fmt.Sprintf("%s MultiXacts made since then (%s after), past the %s the offset cache holds (%d pages of %s offsets; %s)",
				formatCount(g.PassedCount), diagnose.SecondsText(g.PassedT-g.From), formatCount(span.MXIDs), span.Pages,
				formatCount(span.MXIDs/float64(span.Pages)), span.Source)},
		diagnose.Evidence{Series: ageSeries, T: g.To, Value: g.EndAge,
			Text: fmt.Sprintf("mxid age %s: %s MultiXacts in %s of hold, %s/s", formatCount(g.EndAge), formatCount(g.Count),
				diagnose.SecondsText(g.To-g.From), formatRate(g.Rate()))},
		diagnose.Evidence{Series: h.Series, T: h.End, Value: h.EndAge,
			Text: fmt.Sprintf("xmin horizon held for %s, age %s xids", diagnose.SecondsText(h.Duration()), formatCount(h.EndAge))})
	if known {
		f.Evidence = append(f.Evidence, holderEvidence(holder))
	}
	f.Evidence = append(f.Evidence, causeEvidence(patterns, causes)...)

	f.Mechanism = "Every time a second transaction (or a transaction's own subtransaction) locks or updates a row another " +
		"still holds — a SAVEPOINT after a row lock, a PL/pgSQL EXCEPTION block, SELECT … FOR SHARE / FOR KEY SHARE, a " +
		"foreign-key check — PostgreSQL makes a new MultiXactId, one slot in pg_multixact/offsets. That SLRU is read " +
		"through a cache of a few pages. While the xmin horizon is held, lookups reach back to every MultiXact made since the " +
		"hold began, so once they outnumber what the cache's pages span, the cache starts missing: reads go to disk and " +
		"every writer queues on the MultiXact locks (multixact-slru-thrash)."
	var remedy []string
	if known {
		remedy = append(remedy, holder.remedy())
	} else {
		remedy = append(remedy, "End the transaction holding the horizon and cap transaction length: "+
			"`idle_in_transaction_session_timeout = '10s'`, `statement_timeout`.")
	}
	if len(patterns) > 0 {
		remedy = append(remedy, fmt.Sprintf("Take the SAVEPOINT out of %s, or lock the row in the same (sub)transaction that updates it.", patterns[0].Script))
	}
	for i, c := range causes {
		if i == 2 {
			break
		}
		remedy = append(remedy, c.Remedy)
	}
	if len(patterns) == 0 && len(causes) == 0 {
		remedy = append(remedy, "Find the statements that share row locks (SELECT … FOR SHARE/KEY SHARE, inserts checking a "+
			"foreign key, FOR UPDATE then an update inside a SAVEPOINT) and avoid the sharing.")
	}
	remedy = append(remedy, "Watch the rate: `SELECT mxid_age(datminmxid) FROM pg_database` sampled twice; "+
		"PostgreSQL 17 can enlarge the cache with multixact_offset_buffers and multixact_member_buffers.")
	f.Remedy = strings.Join(remedy, " ")
	f.References = []string{
		"https://www.postgresql.org/docs/current/routine-vacuuming.html#VACUUM-FOR-MULTIXACT-WRAPAROUND",
		"https://www.postgresql.org/docs/current/explicit-locking.html#LOCKING-ROWS",
		"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-SLRU-VIEW",
	}
	return f
}
