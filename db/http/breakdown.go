package http

import (
	"context"
	"encoding/json"
	"strconv"

	httptarget "github.com/firedrill/firedrill/db/http/client"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// breakdownColumns head each endpoint's row in the terminal summary.
var breakdownColumns = []string{"requests", "2xx", "3xx", "4xx", "5xx", "no reply", "p50", "p99", "max"}

// Evidence is the run's breakdown of each workload's requests by
// endpoint (timeline.Breakdown, which the terminal summary prints): its
// requests, replies by status class, requests without a reply and
// request latency over the whole run. The counters are each workload's
// own, so that two workloads on one endpoint stay apart.
func (tg *target) Evidence(context.Context) ([]timeline.Sample, error) {
	tg.mu.Lock()
	workloads := append([]workloadStats(nil), tg.workloads...)
	tg.mu.Unlock()
	b := breakdown(workloads)
	if len(b.Rows) == 0 {
		return nil, nil
	}
	detail, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	return []timeline.Sample{{Source: timeline.SourceBreakdown, Detail: detail}}, nil
}

// breakdown is the workloads' rows, an endpoint each, in the order the
// workloads were made and their endpoints first seen; rows of endpoints
// no request reached are left out. A workload made twice (its fallback
// to this target) adds its rows under the same name.
func breakdown(workloads []workloadStats) timeline.Breakdown {
	b := timeline.Breakdown{What: "endpoint", Columns: breakdownColumns}
	var zero, snap httptarget.Snapshot
	var q [2]float64
	for _, w := range workloads {
		for _, ep := range w.stats.Endpoints() {
			replies, errs := ep.Replies.Load(), ep.Errors.Load()
			if replies+errs == 0 {
				continue
			}
			cells := []string{strconv.FormatInt(replies+errs, 10)}
			for class := 2; class <= 5; class++ {
				cells = append(cells, strconv.FormatInt(ep.Status[class].Load(), 10))
			}
			cells = append(cells, strconv.FormatInt(errs, 10))
			ep.Latency.Snapshot(&snap)
			if httptarget.Quantiles(&zero, &snap, []float64{0.5, 0.99}, q[:]) > 0 {
				cells = append(cells, present.MillisText(q[0]), present.MillisText(q[1]), present.MillisText(httptarget.MaxIn(&zero, &snap)))
			} else {
				cells = append(cells, "-", "-", "-")
			}
			b.Rows = append(b.Rows, timeline.BreakdownRow{Workload: w.name, Name: ep.Name, Cells: cells})
		}
	}
	return b
}
