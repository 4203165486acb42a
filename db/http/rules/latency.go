package httprules

import (
	"fmt"
	"math"
	"strings"

	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// latencyRise finds an endpoint whose p99 rose during the run, and
// answers the first question every engineer in the incidents asked: does
// the time go to the database? Within a run of several targets it reads
// each other target's server activity (diagnose.Peers): when a database's
// active sessions rose with the latency, the time went there; when the
// databases stayed idle while the latency grew, it went elsewhere — the
// service's own queue and threads, its GC, the network, the machine.
type latencyRise struct{}

var _ diagnose.Rule = latencyRise{}

func (latencyRise) ID() string { return "http-latency" }

// Inputs names the sources the rule reads; the other targets' series
// come from their own views (diagnose.Peers).
func (latencyRise) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{httpmetric.Source}, Also: []string{hostmetric.Host}}
}

// Thresholds of a latency rise.
const (
	latencyRiseFactor  = 3    // the p99 held this many times its start …
	latencyRiseFloorMS = 50   // … and this much above it
	latencyHighFactor  = 2    // a sample counts as high from this many times the start …
	latencyHighFloorMS = 20   // … and this much above it
	latencyMinHigh     = 3    // high samples needed
	latencyBaseSamples = 5    // the start: the endpoint's first samples
	latencyCriticalMS  = 1000 // a p99 of a second …
	latencyCriticalX   = 10   // … and ten times the start: critical
	// Of a database's active sessions, for the time to be its.
	dbActiveRise   = 1.0 // sessions more in the rise than at the start …
	dbActiveFactor = 2.0 // … and this many times as many
	dbCorrelation  = 0.4 // Pearson's r of its activity with the p99, sample by sample
	// dbIdleSessions: a database whose active sessions stay under this
	// was idle, whatever its rise.
	dbIdleSessions = 0.5
	hostCPUBusyPct = 90 // the machine's CPUs busy from this share
)

// rise is one endpoint's p99 over the run.
type rise struct {
	endpoint           string
	p99                []timeline.Point // samples with requests to the endpoint
	baseMS, peakMS     float64
	peakT              float64
	baseFrom, baseTo   float64 // the start's window
	from, to           float64 // first and last high sample
	rateBase, rateHigh float64 // requests/s at the start and in the rise
}

// riseOf finds an endpoint's p99 rise; ok is false without one.
func riseOf(run *timeline.Run, endpoint string) (rise, bool) {
	r := rise{endpoint: endpoint}
	tick := diagnose.Tick(run)
	var rate []timeline.Point
	for _, s := range run.SourceSamples(httpmetric.Source) {
		if s.Error != "" {
			continue
		}
		n := s.Values[httpmetric.EndpointKey(endpoint, httpmetric.RequestsPerS)]
		v, ok := s.Values[httpmetric.EndpointKey(endpoint, httpmetric.P99MS)]
		if n <= 0 || !ok {
			continue
		}
		r.p99 = append(r.p99, timeline.Point{T: s.T, V: v})
		rate = append(rate, timeline.Point{T: s.T, V: n})
	}
	if len(r.p99) < latencyBaseSamples+latencyMinHigh {
		return r, false
	}
	// The start is the first latencyBaseSamples samples: fixed, so that
	// what a live pass calls the start is what the whole run does.
	nBase := latencyBaseSamples
	r.baseFrom, r.baseTo = r.p99[0].T-tick, r.p99[nBase-1].T
	r.baseMS = diagnose.Median(r.p99[:nBase], math.Inf(-1), math.Inf(1))
	high := math.Max(latencyHighFactor*r.baseMS, r.baseMS+latencyHighFloorMS)
	var highs []timeline.Point
	for _, p := range r.p99[nBase:] {
		if p.V >= high {
			highs = append(highs, p)
		}
	}
	if len(highs) < latencyMinHigh {
		return r, false
	}
	r.from, r.to = highs[0].T-tick, highs[len(highs)-1].T
	r.peakMS, r.peakT = diagnose.PeakOfMedians(r.p99, r.from, r.to+tick/2)
	if r.peakMS < latencyRiseFactor*r.baseMS || r.peakMS-r.baseMS < latencyRiseFloorMS {
		return r, false
	}
	r.rateBase = diagnose.Over(rate, r.baseFrom, r.baseTo+tick/2).Mean
	r.rateHigh = diagnose.Over(rate, r.from, r.to+tick/2).Mean
	return r, true
}

// dbShare is what one observed database did while the latency rose.
type dbShare struct {
	peer             diagnose.Peer
	series           string
	baseMean, during float64 // mean active sessions at the start and in the rise
	peak, peakT      float64
	corr             float64 // Pearson's r with the p99
	waits            []diagnose.Wait
}

// busy says whether the database grew busy with the latency.
func (d dbShare) busy() bool {
	return d.during >= dbIdleSessions && d.during-d.baseMean >= dbActiveRise &&
		d.during >= dbActiveFactor*math.Max(d.baseMean, 0.1) && d.corr >= dbCorrelation
}

// shareOf reads a peer's activity against the rise.
func shareOf(p diagnose.Peer, r rise, tick float64) (dbShare, bool) {
	active, name := p.Activity.Activity(p.Run)
	if len(active) == 0 {
		return dbShare{}, false
	}
	d := dbShare{peer: p, series: name}
	d.baseMean = diagnose.Over(active, r.baseFrom, r.baseTo+tick/2).Mean
	during := diagnose.Over(active, r.from, r.to+tick/2)
	if during.N == 0 {
		return dbShare{}, false
	}
	d.during, d.peak, d.peakT = during.Mean, during.Max, during.MaxT
	var xs, ys []float64
	for _, pt := range r.p99 {
		if a, ok := diagnose.PointNear(active, pt.T, tick); ok {
			xs, ys = append(xs, pt.V), append(ys, a.V)
		}
	}
	d.corr = pearson(xs, ys)
	d.waits = p.Activity.Waits(p.Run, r.from, r.to+tick/2)
	return d, true
}

func (latencyRise) Check(run *timeline.Run) []diagnose.Finding {
	var best rise
	found := false
	for _, ep := range endpoints(run) {
		if r, ok := riseOf(run, ep); ok && (!found || r.peakMS-r.baseMS > best.peakMS-best.baseMS) {
			best, found = r, true
		}
	}
	if !found {
		return nil
	}
	r := best
	tick := diagnose.Tick(run)
	severity := diagnose.Warning
	if r.peakMS >= latencyCriticalMS && r.peakMS >= latencyCriticalX*r.baseMS {
		severity = diagnose.Critical
	}
	f := diagnose.Finding{
		Severity: severity,
		Start:    r.from,
		End:      r.to,
		Workload: workloadOf(run),
		Evidence: []diagnose.Evidence{{
			Series: series(httpmetric.EndpointKey(r.endpoint, httpmetric.P99MS)), T: r.peakT, Value: r.peakMS,
			Text: fmt.Sprintf("%s p99 %s at the start, %s at its height", r.endpoint, ms(r.baseMS), ms(r.peakMS)),
		}},
		References: []string{"https://www.brendangregg.com/usemethod.html"},
	}
	if r.rateBase > 0 && r.rateHigh > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{
			Series: series(httpmetric.EndpointKey(r.endpoint, httpmetric.RequestsPerS)), Value: r.rateHigh,
			Text: fmt.Sprintf("%s answered %.0f requests/s at the start, %.0f/s during the rise", r.endpoint, r.rateBase, r.rateHigh),
		})
	}

	var observed []dbShare
	for _, p := range diagnose.Peers(run) {
		if p.Activity == nil {
			continue
		}
		if d, ok := shareOf(p, r, tick); ok {
			observed = append(observed, d)
		}
	}
	var culprit *dbShare
	for i := range observed {
		if d := &observed[i]; d.busy() && (culprit == nil || d.during-d.baseMean > culprit.during-culprit.baseMean) {
			culprit = d
		}
	}
	for _, d := range observed {
		f.Evidence = append(f.Evidence, diagnose.Evidence{
			Series: d.peer.Name + ":" + d.series, T: d.peakT, Value: d.during,
			Text: fmt.Sprintf("database %s: %.1f active sessions at the start, %.1f on average during the rise (peak %.0f); correlation with the p99 %.2f",
				d.peer.Name, d.baseMean, d.during, d.peak, d.corr),
		})
		if len(d.waits) > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{
				Series: d.peer.Name + ":" + d.waits[0].Series, Value: d.waits[0].Sessions,
				Text: fmt.Sprintf("database %s's active sessions during the rise: %s", d.peer.Name, waitsText(d.waits)),
			})
		}
	}
	switch {
	case culprit != nil:
		f.Headline = fmt.Sprintf("%s p99 rose from %s to %s, and the time went to the database %s (%.1f → %.1f active sessions)",
			r.endpoint, ms(r.baseMS), ms(r.peakMS), culprit.peer.Name, culprit.baseMean, culprit.during)
		f.Mechanism = fmt.Sprintf("The database %s's active sessions rose with the service's latency, sample by sample: the requests spent their added time waiting on its queries (running, or queued for its CPU, disk or locks), and the service's threads and connection pool held them meanwhile. More requests per second only add sessions there.", culprit.peer.Name)
		f.Remedy = fmt.Sprintf("Make the queries cheaper rather than the service bigger: the findings about the target %s name what its sessions spent the time on (a missing index, lock waits, commits); a bigger connection pool or more service instances only move the queue into the database.", culprit.peer.Name)
	case len(observed) > 0:
		f.Headline = fmt.Sprintf("%s p99 rose from %s to %s while the database stayed idle: the time goes elsewhere", r.endpoint, ms(r.baseMS), ms(r.peakMS))
		f.Mechanism = "No observed database grew busy with the latency, so the requests waited before or after their queries: in the service's own request queue or thread pool (more requests than threads), its garbage collector, a lock or a slow call inside it, a downstream the run does not observe, the network, or the machine's CPU."
		f.Remedy = "Look inside the service at the rise: its busy and queued requests (thread pool, accept queue), GC pauses, calls to other services; raise its concurrency or instances if its threads are all busy while its CPU is not, and profile it if its CPU is."
		hostCPU(run, r, &f)
	default:
		f.Headline = fmt.Sprintf("%s p99 rose from %s to %s", r.endpoint, ms(r.baseMS), ms(r.peakMS))
		f.Mechanism = "The service's latency rose during the run. No database was observed beside it, so this run cannot tell whether the time went to a database or stayed in the service (its queue, threads, GC) or the network."
		f.Remedy = "Add the service's database as a target of the run (targets: {db: {kind: postgres, dsn: …}}, no workload needed): its active sessions and waits then sit on the same clock, and this finding says where the time went."
		hostCPU(run, r, &f)
	}
	return []diagnose.Finding{f}
}

// hostCPU adds the machine's CPU during the rise to a finding whose time
// went elsewhere, and says so when the CPUs were saturated.
func hostCPU(run *timeline.Run, r rise, f *diagnose.Finding) {
	idle := diagnose.Over(run.Series(hostmetric.Host, hostmetric.CPUIdle), r.from, r.to+diagnose.Tick(run)/2)
	if idle.N == 0 {
		return
	}
	busy := 100 - idle.Mean
	text := fmt.Sprintf("the machine's CPUs were %.0f %% busy during the rise", busy)
	if busy >= hostCPUBusyPct {
		text += ": saturated, so the service (and firedrill, if on the same machine) waited for CPU"
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: series2(hostmetric.Host, hostmetric.CPUIdle), Value: idle.Mean, Text: text})
}

func series2(source, key string) string { return source + ":" + key }

// waitsText lists the top waits: "IO:DataFileRead 3.2, CPU 1.1".
func waitsText(ws []diagnose.Wait) string {
	var parts []string
	for i, w := range ws {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", w.Name, w.Sessions))
	}
	return strings.Join(parts, ", ")
}

// ms writes milliseconds for people.
func ms(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// pearson is the correlation of xs and ys, 0 when either is flat or they
// are fewer than three.
func pearson(xs, ys []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 3 || len(xs) != len(ys) {
		return 0
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var cov, vx, vy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		cov += dx * dy
		vx += dx * dx
		vy += dy * dy
	}
	if vx == 0 || vy == 0 {
		return 0
	}
	return cov / math.Sqrt(vx*vy)
}
