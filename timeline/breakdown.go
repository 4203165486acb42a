package timeline

import (
	"encoding/json"
	"slices"
)

// SourceBreakdown is the source of a target's breakdown of its
// workloads' totals (an HTTP service's: per endpoint), recorded once
// after the load as end-of-run evidence: one sample whose Detail is a
// Breakdown. The terminal summary prints it under the workloads' table.
const SourceBreakdown = "breakdown"

// Breakdown is a table of a target's rows per workload: what a kind
// counts finer than the transaction (each endpoint's requests, status
// classes and percentiles), already written for people.
type Breakdown struct {
	// What names a row (endpoint); Columns head the cells.
	What    string         `json:"what"`
	Columns []string       `json:"columns"`
	Rows    []BreakdownRow `json:"rows"`
}

// BreakdownRow is one row: the workload, what it is of, its cells.
type BreakdownRow struct {
	Workload string   `json:"workload"`
	Name     string   `json:"name"`
	Cells    []string `json:"cells"`
}

// Breakdowns are the run's breakdowns, with their targets, in the order
// recorded; a detail that cannot be read is left out.
func (r *Run) Breakdowns() []TargetBreakdown {
	var out []TargetBreakdown
	for _, s := range r.Samples {
		if s.Source != SourceBreakdown || len(s.Detail) == 0 {
			continue
		}
		var b Breakdown
		if json.Unmarshal(s.Detail, &b) != nil || len(b.Rows) == 0 {
			continue
		}
		b.Rows = slices.DeleteFunc(b.Rows, func(r BreakdownRow) bool { return len(r.Cells) != len(b.Columns) })
		out = append(out, TargetBreakdown{Target: s.Target, Breakdown: b})
	}
	return out
}

// TargetBreakdown is a breakdown and the target it is of ("" in a run
// of one system).
type TargetBreakdown struct {
	Target string
	Breakdown
}
