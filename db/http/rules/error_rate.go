package httprules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/timeline"
)

// errorRate finds endpoints whose requests failed on the service's side:
// replies of 5xx, and requests that got no reply (timed out, the
// connection lost mid-request, refused).
type errorRate struct{}

var _ diagnose.Rule = errorRate{}

func (errorRate) ID() string { return "http-error-rate" }

// Inputs names the sources the rule reads.
func (errorRate) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{httpmetric.Source}}
}

// Shares of the requests that failed on the service's side, over the
// worst window of errorWindow samples with at least errorWindowMin
// requests: a window that happened stays happened, so the severity a
// live pass gives is one the whole run keeps.
const (
	errorRateWarn     = 0.01 // one request in a hundred: users see it
	errorRateCritical = 0.10 // one in ten: the endpoint is failing
	errorWindow       = 5
	errorWindowMin    = 20
)

// endpointFailures is one endpoint's failed requests over the run.
type endpointFailures struct {
	endpoint string
	c        counts
	failed   float64 // 5xx and no reply
	// worst is the largest share failed over a window, which ends at
	// worstT.
	worst, worstT float64
}

// worstWindow is the largest share of an endpoint's requests that failed
// over errorWindow consecutive samples (each with its requests), and
// when that window ended.
func worstWindow(run *timeline.Run, endpoint string) (share, at float64) {
	type tick struct{ t, failed, attempts float64 }
	var ticks []tick
	for _, s := range run.SourceSamples(httpmetric.Source) {
		if s.Error != "" {
			continue
		}
		replies := s.Values[httpmetric.EndpointKey(endpoint, httpmetric.RequestsPerS)]
		noReply := s.Values[httpmetric.EndpointKey(endpoint, httpmetric.ErrorsPerS)]
		failed := s.Values[httpmetric.EndpointKey(endpoint, httpmetric.StatusClass(5))] + noReply
		ticks = append(ticks, tick{s.T, failed, replies + noReply})
	}
	for i := 0; i+errorWindow <= len(ticks); i++ {
		var failed, attempts float64
		for _, tk := range ticks[i : i+errorWindow] {
			failed += tk.failed
			attempts += tk.attempts
		}
		if attempts*diagnose.Tick(run) >= errorWindowMin && failed/attempts > share {
			share, at = failed/attempts, ticks[i+errorWindow-1].t
		}
	}
	return share, at
}

func (errorRate) Check(run *timeline.Run) []diagnose.Finding {
	var worst []endpointFailures
	for _, ep := range endpoints(run) {
		c := countsOf(run, ep)
		if failed := c.byClass[5] + c.noReply; round(failed) > 0 {
			w := endpointFailures{endpoint: ep, c: c, failed: failed}
			w.worst, w.worstT = worstWindow(run, ep)
			worst = append(worst, w)
		}
	}
	if len(worst) == 0 {
		return nil
	}
	slices.SortStableFunc(worst, func(a, b endpointFailures) int {
		switch {
		case a.worst > b.worst:
			return -1
		case a.worst < b.worst:
			return 1
		}
		return 0
	})
	top := worst[0]
	severity := diagnose.Info
	switch {
	case top.worst >= errorRateCritical:
		severity = diagnose.Critical
	case top.worst >= errorRateWarn:
		severity = diagnose.Warning
	}
	tick := diagnose.Tick(run)
	f := diagnose.Finding{
		Severity: severity,
		Start:    top.c.from,
		End:      top.c.to,
		Workload: workloadOf(run),
		Headline: fmt.Sprintf("%s failed %.1f %% of its requests (%s)", top.endpoint, 100*top.c.share(top.failed), failureKinds(top.c)),
		// The severity rests on the worst window, which later samples
		// cannot undo.
		Lasting: true,
	}
	if top.worst > 0 {
		f.Headline += fmt.Sprintf(", %.0f %% over %.0f s at the worst", 100*top.worst, errorWindow*tick)
		f.Evidence = append(f.Evidence, diagnose.Evidence{
			Series: series(httpmetric.EndpointKey(top.endpoint, httpmetric.ErrorsPerS)), T: top.worstT, Value: top.worst,
			Text: fmt.Sprintf("%s: %.1f %% of its requests failed in the %.0f s up to %.0f s", top.endpoint, 100*top.worst, errorWindow*tick, top.worstT),
		})
	}
	for _, w := range worst {
		if w.c.byClass[5] > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{
				Series: series(httpmetric.EndpointKey(w.endpoint, httpmetric.StatusClass(5))), Value: round(w.c.byClass[5]),
				Text: fmt.Sprintf("%s: %.0f replies 5xx of %.0f requests (%.1f %%)", w.endpoint, w.c.byClass[5], w.c.attempts(), 100*w.c.share(w.c.byClass[5])),
			})
		}
		if w.c.noReply > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{
				Series: series(httpmetric.EndpointKey(w.endpoint, httpmetric.ErrorsPerS)), Value: round(w.c.noReply),
				Text: fmt.Sprintf("%s: %.0f requests without a reply of %.0f (%.1f %%)", w.endpoint, w.c.noReply, w.c.attempts(), 100*w.c.share(w.c.noReply)),
			})
		}
	}
	codes := codesOf(run)
	kinds := failureCodes(codes)
	if len(kinds) > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:errors", Text: "failed requests by code: " + strings.Join(kinds, ", ")})
	}
	f.Mechanism, f.Remedy = errorCause(top.c, codes)
	f.References = []string{
		"https://www.rfc-editor.org/rfc/rfc9110#name-server-error-5xx",
		"https://sre.google/sre-book/monitoring-distributed-systems/#xref_monitoring_golden-signals",
	}
	return []diagnose.Finding{f}
}

// failureKinds says in words what an endpoint's failures were.
func failureKinds(c counts) string {
	var parts []string
	if n := round(c.byClass[5]); n > 0 {
		parts = append(parts, fmt.Sprintf("%.0f 5xx", n))
	}
	if n := round(c.noReply); n > 0 {
		parts = append(parts, fmt.Sprintf("%.0f without a reply", n))
	}
	return strings.Join(parts, ", ")
}

// failureCodes lists the codes of failed requests that are the service's
// failures, the most first: "http-503 ×120", "timeout ×4".
func failureCodes(codes map[string]int64) []string {
	var keys []string
	for code := range codes {
		if serverSide(code) {
			keys = append(keys, code)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if codes[a] != codes[b] {
			return int(codes[b] - codes[a])
		}
		return strings.Compare(a, b)
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s ×%d", describeCode(k), codes[k])
	}
	return out
}

// serverSide says whether a code is a failure of the service (5xx, no
// reply) rather than of the request (4xx, a failed \check).
func serverSide(code string) bool {
	if status, ok := strings.CutPrefix(code, httpmetric.CodeStatusPrefix); ok {
		return strings.HasPrefix(status, "5")
	}
	return code == httpmetric.CodeTimeout || code == engine.CodeConnection || code == engine.CodeConnect
}

// describeCode names a code for people.
func describeCode(code string) string {
	switch code {
	case engine.CodeConnection:
		return "connection lost mid-request (" + code + ")"
	case engine.CodeConnect:
		return "connection refused (" + code + ")"
	}
	return code
}

// errorCause explains the dominant failure and what to do about it.
func errorCause(c counts, codes map[string]int64) (mechanism, remedy string) {
	timeouts, lost, refused := codes[httpmetric.CodeTimeout], codes[engine.CodeConnection], codes[engine.CodeConnect]
	switch {
	case c.byClass[5] >= c.noReply:
		return "The service answered with a server error: the request reached it and failed inside it (an exception, a dependency that failed or timed out — a database, a pool with no free connection — or a proxy or limiter in front answering 502/503/504 for a backend that did not).",
			"Read the service's log for the failing requests at the times above; for 503/504 look at what sits in front (proxy timeouts, the service's own limits) and at the dependencies observed in this run; fix the cause before raising any timeout."
	case timeouts >= lost && timeouts >= refused:
		return "Requests got no reply within the target's timeout: the service took them and stalled (its threads or queue full, a slow dependency, a lock), so callers give up while the service may go on working on them.",
			"Find where the requests waited (the latency finding of this run says whether the database grew busy with them); bound the service's queue and its calls' timeouts below the callers' so it fails fast instead of working for callers that left."
	case lost >= refused:
		return "Connections broke mid-request: the service (or a proxy before it) closed them with a request in flight — a crash or restart, an idle timeout shorter than the clients' keep-alive, or a limit on requests per connection.",
			"Check the service's and the proxy's logs for restarts at those times; make the server's keep-alive timeout longer than the clients' idle time, and retry only idempotent requests."
	}
	return "The service refused connections: nothing listened on its address, or its accept backlog was full.",
		"Check that the service is up at the target's url before the load starts (a start: on the workload gives it time) and, under load, its listen backlog and connection limits."
}
