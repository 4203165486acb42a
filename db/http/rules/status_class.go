package httprules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/timeline"
)

// statusClass finds endpoints whose replies were mostly not what a load
// test means to measure: client errors (4xx: the requests themselves are
// refused — a path, an id, credentials, a rate limit) and redirects
// (3xx, which firedrill does not follow: the load measured the redirect,
// not the page).
type statusClass struct{}

var _ diagnose.Rule = statusClass{}

func (statusClass) ID() string { return "http-status-class" }

// Inputs names the sources the rule reads.
func (statusClass) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{httpmetric.Source}}
}

// Shares of an endpoint's requests from which a class is reported.
const (
	clientErrorWarn = 0.05 // one request in twenty refused: the script or the service's rules are off
	redirectWarn    = 0.50 // most replies redirects: the load measures the redirect
)

// classShare is one endpoint's share of a status class.
type classShare struct {
	endpoint string
	c        counts
	class    int
	share    float64
}

func (statusClass) Check(run *timeline.Run) []diagnose.Finding {
	var found []classShare
	for _, ep := range endpoints(run) {
		c := countsOf(run, ep)
		if round(c.byClass[4]) > 0 {
			found = append(found, classShare{ep, c, 4, c.share(c.byClass[4])})
		}
		if s := c.share(c.byClass[3]); s >= redirectWarn {
			found = append(found, classShare{ep, c, 3, s})
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.SortStableFunc(found, func(a, b classShare) int {
		switch {
		case a.share > b.share:
			return -1
		case a.share < b.share:
			return 1
		}
		return 0
	})
	top := found[0]
	severity := diagnose.Info
	if (top.class == 4 && top.share >= clientErrorWarn) || top.class == 3 {
		severity = diagnose.Warning
	}
	f := diagnose.Finding{
		Severity: severity,
		Start:    top.c.from,
		End:      top.c.to,
		Workload: workloadOf(run),
		Headline: fmt.Sprintf("%.0f %% of %s's replies were %dxx", 100*top.share, top.endpoint, top.class),
	}
	for _, cs := range found {
		f.Evidence = append(f.Evidence, diagnose.Evidence{
			Series: series(httpmetric.EndpointKey(cs.endpoint, httpmetric.StatusClass(cs.class))), Value: round(cs.c.byClass[cs.class]),
			Text: fmt.Sprintf("%s: %.0f replies %dxx of %.0f requests (%.1f %%)", cs.endpoint, cs.c.byClass[cs.class], cs.class, cs.c.attempts(), 100*cs.share),
		})
	}
	codes := codesOf(run)
	var statuses []string
	for code, n := range codes {
		if status, ok := strings.CutPrefix(code, httpmetric.CodeStatusPrefix); ok && strings.HasPrefix(status, "4") {
			statuses = append(statuses, fmt.Sprintf("%s ×%d", status, n))
		}
	}
	slices.Sort(statuses)
	if len(statuses) > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:errors", Text: "client errors by status: " + strings.Join(statuses, ", ")})
	}
	if codes[httpmetric.CodeCheck] > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:errors", Value: float64(codes[httpmetric.CodeCheck]),
			Text: fmt.Sprintf("%d requests failed a \\check (the run's error table has each check and what was seen)", codes[httpmetric.CodeCheck])})
	}
	if top.class == 3 {
		f.Mechanism = "firedrill does not follow redirects: a 3xx is the reply it measures. When most replies of an endpoint redirect (http→https, a missing trailing slash, a login page), the load measured the redirect, not the page behind it, and its latency and the service's work say little about the page."
		f.Remedy = "Request the final URL in the script (the Location the replies name: https, the trailing slash), or log in first and send the session's cookie or token in the target's headers."
	} else {
		f.Mechanism = "A 4xx is the service refusing the request itself: 400 a malformed request or parameter, 401/403 missing or wrong credentials, 404 an id or path that does not exist, 409 a conflict, 429 a rate limit. Refused requests are cheap for the service, so the load it saw was lighter than the script meant, and the latency measured is the refusal's."
		f.Remedy = "Fix the request the script sends for that status: ids within what exists (\\set id random(…) over the real range), the target's headers for credentials (Authorization: \"Bearer ${TOKEN}\"); for 429, the service's rate limit is the capacity being measured — lower the rate or raise the limit for the test. Add a \\check status == 200 to count them as failures where they are not expected."
	}
	f.References = []string{
		"https://www.rfc-editor.org/rfc/rfc9110#name-client-error-4xx",
		"https://www.rfc-editor.org/rfc/rfc9110#name-redirection-3xx",
	}
	return []diagnose.Finding{f}
}
