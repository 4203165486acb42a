package pgbenchcmd

import (
	"maps"
	"time"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/internal/promexport"
	"github.com/firedrill/firedrill/timeline"
)

// liveWorkload is the workload label of firedrill pgbench's series: one
// workload, as in pgbench every client picks among the scripts for each
// transaction, so the clients, the rate and the latency belong to the
// run, not to a script (and the dashboard's per-workload panels show
// one line, not one per script with the clients counted again).
const liveWorkload = "pgbench"

// liveFeed hands the engine's intervals to the live exporter
// (--metrics-addr) under the same metric names and labels as firedrill
// run, and, when the run ends, what it did after the last interval, so
// that the exporter's counters end at the totals pgbench prints.
type liveFeed struct {
	exp     *promexport.Exporter
	fed     timeline.Interval // what was fed so far: its counts and latency
	fedLag  engine.Simple     // the schedule lag fed so far (-R)
	lastEnd float64           // seconds since the start: the last interval's end
}

// newLiveFeed starts a run in ep's exporter; nil without --metrics-addr.
func newLiveFeed(ep *promexport.Endpoint, duration time.Duration) *liveFeed {
	exp := ep.Exporter()
	if exp == nil {
		return nil
	}
	exp.Start(promexport.Labels{
		Scenario: "pgbench",
		RunID:    "pgbench-" + time.Now().Format("20060102-150405"),
		Backend:  "postgres",
	}, duration)
	return &liveFeed{exp: exp, fed: timeline.Interval{Latency: timeline.NewHistogram()}}
}

// progress feeds one interval (engine.Config.OnProgress).
func (f *liveFeed) progress(p *engine.Progress) {
	iv := p.Timeline(liveWorkload, 0)
	f.add(iv)
	f.fedLag.Merge(&p.Interval.Total.Lag)
	f.exp.Tick(iv.End, []timeline.Interval{*iv}, nil)
}

// add counts iv as fed.
func (f *liveFeed) add(iv *timeline.Interval) {
	f.fed.Count += iv.Count
	f.fed.Failed += iv.Failed
	f.fed.Skipped += iv.Skipped
	f.fed.Late += iv.Late
	f.fed.Retried += iv.Retried
	f.fed.Retries += iv.Retries
	f.fed.Errors = addCounts(f.fed.Errors, iv.Errors)
	f.fed.Refused = addCounts(f.fed.Refused, iv.Refused)
	f.fed.Unavailable = addCounts(f.fed.Unavailable, iv.Unavailable)
	f.fed.Lost = addCounts(f.fed.Lost, iv.Lost)
	f.fed.Latency.Merge(iv.Latency)
	f.lastEnd = max(f.lastEnd, iv.End)
}

// finish feeds what the run did after the last interval (the run's
// totals minus what was fed) as one more interval, and marks the run
// over. With FinalProgress the engine has reported it already and there
// is nothing left; with -P, whose lines must stay pgbench's, it has not.
func (f *liveFeed) finish(res *engine.Result, clients int, rate float64) {
	if f == nil {
		return
	}
	if res != nil && res.Totals != nil {
		tot := (&engine.Progress{Interval: res.Totals, Clients: clients, Rate: rate}).Timeline(liveWorkload, 0)
		tail := &timeline.Interval{
			Workload: liveWorkload, Start: f.lastEnd, End: max(f.lastEnd, res.Elapsed.Seconds()),
			Clients: clients, Rate: rate,
			Count: tot.Count - f.fed.Count, Failed: tot.Failed - f.fed.Failed, Skipped: tot.Skipped - f.fed.Skipped,
			Late: tot.Late - f.fed.Late, Retried: tot.Retried - f.fed.Retried, Retries: tot.Retries - f.fed.Retries,
			Errors: subCounts(tot.Errors, f.fed.Errors), Refused: subCounts(tot.Refused, f.fed.Refused),
			Unavailable: subCounts(tot.Unavailable, f.fed.Unavailable), Lost: subCounts(tot.Lost, f.fed.Lost),
			Latency: tot.Latency,
		}
		tail.Latency.Subtract(f.fed.Latency)
		tail.LatencyPct = tail.Latency.Percentiles()
		lag := res.Totals.Total.Lag
		if n := lag.Count - f.fedLag.Count; n > 0 {
			tail.LagMeanUS = (lag.Sum - f.fedLag.Sum) / float64(n)
			// A maximum cannot be subtracted: the run's is the tail's if
			// no interval fed had it; else the tail's mean bounds it below.
			tail.LagMaxUS = int64(tail.LagMeanUS)
			if lag.Max > f.fedLag.Max {
				tail.LagMaxUS = int64(lag.Max)
			}
		}
		if tail.Count+tail.Failed+tail.Skipped > 0 {
			f.add(tail)
			f.exp.Tick(tail.End, []timeline.Interval{*tail}, nil)
		}
	}
	f.exp.Finish()
}

// addCounts adds counts by code into into (made when needed).
func addCounts(into, m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return into
	}
	if into == nil {
		into = make(map[string]int64, len(m))
	}
	for k, v := range m {
		into[k] += v
	}
	return into
}

// subCounts is total minus fed, by code, without the codes left at zero.
func subCounts(total, fed map[string]int64) map[string]int64 {
	out := maps.Clone(total)
	if out == nil {
		out = map[string]int64{}
	}
	for k, v := range fed {
		out[k] -= v
		if out[k] <= 0 {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
