// Package httprules holds the diagnosis rules of an HTTP service (a
// target of kind http): its failed requests and the status classes of its
// replies, per endpoint, and its latency, with where the time went: into
// a database observed in the same run, or elsewhere. One file per rule,
// listed in Rules, which the http backend registers.
package httprules

import (
	"math"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// Rules lists the HTTP rules, one line each: adding one is a file here
// and a line below. Their order breaks ties between findings.
func Rules() []diagnose.Rule {
	return []diagnose.Rule{
		errorRate{},
		latencyRise{},
		statusClass{},
	}
}

// series is a key of the http source as "source:key", for evidence.
func series(key string) string { return httpmetric.Source + ":" + key }

// endpoints are the endpoints the run recorded, from the keys of the http
// source (one "<endpoint>.requests_per_s" each), in order.
func endpoints(run *timeline.Run) []string {
	seen := map[string]bool{}
	for _, s := range run.SourceSamples(httpmetric.Source) {
		for k := range s.Values {
			if ep, ok := strings.CutSuffix(k, "."+httpmetric.RequestsPerS); ok && ep != "" {
				seen[ep] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for ep := range seen {
		out = append(out, ep)
	}
	slices.Sort(out)
	return out
}

// counts is what an endpoint answered over a window, in requests (the
// per-second series times the tick).
type counts struct {
	replies, noReply float64
	byClass          [6]float64 // [1] … [5]: 1xx … 5xx
	from, to         float64    // the first and last sample with a request
}

// attempts is every request sent: answered or not.
func (c counts) attempts() float64 { return c.replies + c.noReply }

// share is n as a part of the attempts.
func (c counts) share(n float64) float64 {
	if c.attempts() <= 0 {
		return 0
	}
	return n / c.attempts()
}

// countsOf adds up an endpoint's replies by class and its requests
// without a reply ("" for all endpoints) over the whole run.
func countsOf(run *timeline.Run, endpoint string) counts {
	key := func(k string) string {
		if endpoint == "" {
			return k
		}
		return httpmetric.EndpointKey(endpoint, k)
	}
	tick := diagnose.Tick(run)
	c := counts{from: math.Inf(1), to: math.Inf(-1)}
	for _, s := range run.SourceSamples(httpmetric.Source) {
		if s.Error != "" {
			continue
		}
		replies, noReply := s.Values[key(httpmetric.RequestsPerS)], s.Values[key(httpmetric.ErrorsPerS)]
		if replies+noReply <= 0 {
			continue
		}
		c.replies += replies * tick
		c.noReply += noReply * tick
		for class := 1; class <= 5; class++ {
			c.byClass[class] += s.Values[key(httpmetric.StatusClass(class))] * tick
		}
		c.from, c.to = math.Min(c.from, s.T-tick), math.Max(c.to, s.T)
	}
	if math.IsInf(c.from, 1) {
		c.from, c.to = 0, 0
	}
	c.from = math.Max(0, c.from)
	return c
}

// workloadOf is the workload a finding about the target's endpoints
// concerns: the target's only workload, or none when it has several (the
// series are the target's, per endpoint, not per workload).
func workloadOf(run *timeline.Run) string {
	if len(run.Manifest.Workloads) == 1 {
		return run.Manifest.Workloads[0].Name
	}
	return ""
}

// codesOf counts the workloads' failed requests by the codes the engine
// recorded (http-503, timeout, check, the connection's), over the run.
func codesOf(run *timeline.Run) map[string]int64 {
	out := map[string]int64{}
	for _, iv := range run.Intervals {
		for code, n := range iv.Errors {
			out[code] += n
		}
	}
	return out
}

// round is n requests for people: whole ones.
func round(n float64) float64 { return math.Round(n) }
