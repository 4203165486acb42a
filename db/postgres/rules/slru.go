package pgrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"math"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// slruWindowS is the span over which SLRU hits and reads are pooled. The
// server flushes its SLRU counters at most about once a second, so single
// ticks may show no access at all, or two seconds' worth; pooling a few
// seconds smooths that out.
const slruWindowS = 5

// slruPoint is one SLRU cache's access pooled over the slruWindowS
// seconds ending at T.
type slruPoint struct {
	T       float64
	HitRate float64 // 0..1
	Reads   float64 // blocks/s read (misses)
	Access  float64 // blocks/s hit or read
}

// slruRolling pools an SLRU cache's hits and reads over slruWindowS.
// Samples without the cache's rates (the first tick, a failed tick) are
// left out; windows with no access at all are dropped.
func slruRolling(run *timeline.Run, cache string) []slruPoint {
	hits := run.Series(pgmetric.SLRU, pgmetric.SLRUHitsPerS(cache))
	reads := run.Series(pgmetric.SLRU, pgmetric.SLRUReadsPerS(cache))
	readAt := map[float64]float64{}
	for _, p := range reads {
		readAt[p.T] = p.V
	}
	type tick struct{ t, hit, read float64 }
	var ticks []tick
	for _, p := range hits {
		if r, ok := readAt[p.T]; ok && p.V >= 0 && r >= 0 {
			ticks = append(ticks, tick{p.T, p.V, r})
		}
	}
	var out []slruPoint
	for i := range ticks {
		var hit, read float64
		n := 0
		for j := i; j >= 0 && ticks[j].t > ticks[i].t-slruWindowS; j-- {
			hit += ticks[j].hit
			read += ticks[j].read
			n++
		}
		if hit+read <= 0 {
			continue
		}
		out = append(out, slruPoint{T: ticks[i].t, HitRate: hit / (hit + read),
			Reads: read / float64(n), Access: (hit + read) / float64(n)})
	}
	return out
}

// slruThrash is a stretch where an SLRU cache missed far more than it did
// before in the same run.
type slruThrash struct {
	Cache string
	// Baseline is the cache before the drop (HasBaseline false when the
	// run never saw it healthy).
	HasBaseline bool
	BaseFrom    float64
	BaseHit     float64 // 0..1
	BaseReads   float64 // blocks/s
	Onset, End  float64 // the stretch; End is the run's end if it never recovered
	Worst       slruPoint
	MeanHit     float64 // pooled over the stretch
	MeanReads   float64
}

// slruThresholds say how far a cache must fall to count as thrashing.
type slruThresholds struct {
	MinDrop    float64 // hit rate points below the baseline (0..1)
	MaxHit     float64 // the worst pooled hit rate must be below this
	MinReads   float64 // blocks/s read at the worst, absolute floor
	ReadFactor float64 // and this many times the baseline's reads
	MinSpanS   float64 // seconds the drop must last unless the hit rate goes below 50 %
}

// defaultSLRUThresholds: a drop above 50 % must last two pooled windows
// (10 s); three (15 s) put multixact-slru-thrash's first warning 18 s
// after the long transaction began on multixact-broken, where the hit
// rate had fallen 3 s after it. No recording's findings changed.
var defaultSLRUThresholds = slruThresholds{MinDrop: 0.15, MaxHit: 0.9, MinReads: 50, ReadFactor: 5, MinSpanS: 2 * slruWindowS}

// findSLRUThrash looks for the cache's hit rate collapsing against the
// run's own baseline: the best the cache did before its worst moment.
// Without a healthy stretch before, only a hit rate below 50 % counts.
func findSLRUThrash(run *timeline.Run, cache string, th slruThresholds) (slruThrash, bool) {
	pts := slruRolling(run, cache)
	minAccess := th.MinReads / 2
	worst := -1
	for i, p := range pts {
		if p.Access < minAccess {
			continue
		}
		if worst < 0 || p.HitRate < pts[worst].HitRate {
			worst = i
		}
	}
	if worst < 0 {
		return slruThrash{}, false
	}
	w := pts[worst]
	res := slruThrash{Cache: cache, Worst: w}
	// The baseline: windows wholly before the worst one, at their best.
	bestBefore := -1
	for i := 0; i < worst; i++ {
		if pts[i].T > w.T-slruWindowS || pts[i].Access < minAccess/10 {
			continue
		}
		if bestBefore < 0 || pts[i].HitRate > pts[bestBefore].HitRate {
			bestBefore = i
		}
	}
	// The stretch runs from the last window at the baseline before the
	// worst one (within a tenth of the drop: the signal starts rising
	// there) to the first window back within a quarter of the drop after.
	healthy, baseline := 0.5, 0.5
	if bestBefore >= 0 {
		drop := pts[bestBefore].HitRate - w.HitRate
		healthy = pts[bestBefore].HitRate - drop/4
		baseline = pts[bestBefore].HitRate - drop/10
	}
	from := worst
	for from > 0 && pts[from-1].HitRate < baseline {
		from--
	}
	to := worst
	for to+1 < len(pts) && pts[to+1].HitRate < healthy {
		to++
	}
	// The onset is where the first pooled window below that level began.
	res.Onset = math.Max(0, pts[from].T-slruWindowS)
	if from > 0 {
		res.Onset = math.Max(res.Onset, pts[from-1].T)
	}
	res.End = pts[to].T
	if to == len(pts)-1 {
		res.End = math.Max(res.End, diagnose.RunEnd(run))
	}
	var hit, read, n float64
	for _, p := range pts[from : to+1] {
		hit += p.HitRate * p.Access
		read += p.Reads
		n++
	}
	if n > 0 {
		res.MeanReads = read / n
	}
	if hit+read > 0 {
		res.MeanHit = hit / (hit + read)
	}
	// The baseline's figures, pooled over everything before the onset.
	var bHit, bRead, bN float64
	for _, p := range pts {
		if p.T > res.Onset {
			break
		}
		if bN == 0 {
			res.BaseFrom = math.Max(0, p.T-slruWindowS)
		}
		bHit += p.HitRate * p.Access
		bRead += p.Reads
		bN++
	}
	if bestBefore >= 0 && bN > 0 {
		res.HasBaseline = true
		res.BaseHit = bHit / (bHit + bRead)
		res.BaseReads = bRead / bN
	}
	// A short dip that stays above half is a blip, not thrash: it must
	// last or go deep.
	if res.End-res.Onset < th.MinSpanS && w.HitRate >= 0.5 {
		return res, false
	}
	if res.HasBaseline {
		if res.BaseHit-w.HitRate < th.MinDrop || w.HitRate >= th.MaxHit {
			return res, false
		}
		if w.Reads < th.MinReads || w.Reads < th.ReadFactor*res.BaseReads {
			return res, false
		}
		return res, true
	}
	return res, w.HitRate < 0.5 && w.Reads >= 2*th.MinReads
}
