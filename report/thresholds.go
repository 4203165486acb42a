package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// ThresholdResult is the outcome of one threshold condition of a scenario.
type ThresholdResult struct {
	Metric    string `json:"metric"`    // as in the scenario, e.g. "oltp.p99"
	Condition string `json:"condition"` // as written, e.g. "< 50ms"
	// Measured is the metric's value in Unit; 0 when !Measurable.
	Measured float64 `json:"measured"`
	// Unit is the unit of Measured: the threshold's own for a latency
	// ("ms", "s", "us"), "%" for a ratio, "tx/s" for throughput, "" for a
	// count (findings: how many the rule reported).
	Unit       string `json:"unit"`
	Measurable bool   `json:"measurable"`
	// Pass says whether the condition held. An unmeasurable metric fails:
	// a threshold is never passed by lack of data.
	Pass bool `json:"pass"`
	// Why explains a result that is not a plain comparison: why the metric
	// could not be measured, or how it was read.
	Why string `json:"why,omitempty"`
}

// String writes the result on one line: "oltp.p99 < 50ms: 12.3 ms — ok".
func (r ThresholdResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", r.Metric, r.Condition)
	if r.Measurable {
		b.WriteString(r.MeasuredText())
	} else {
		b.WriteString("not measured")
	}
	if r.Pass {
		b.WriteString(" — ok")
	} else {
		b.WriteString(" — FAILED")
	}
	if r.Why != "" {
		fmt.Fprintf(&b, " (%s)", r.Why)
	}
	return b.String()
}

// MeasuredText is the measured value with its unit, "" when unmeasurable.
func (r ThresholdResult) MeasuredText() string {
	if !r.Measurable {
		return ""
	}
	v := strconv.FormatFloat(roundSignificant(r.Measured, 4), 'f', -1, 64)
	switch r.Unit {
	case "":
		return v
	case "%":
		return v + "%"
	}
	return v + " " + r.Unit
}

// roundSignificant rounds v to digits significant digits (12.3456 → 12.35,
// 0.0098234 → 0.009823), keeping whole numbers whole (65536 stays).
func roundSignificant(v float64, digits int) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	exp := int(math.Floor(math.Log10(math.Abs(v)))) + 1 - digits
	if exp >= 0 {
		return math.Round(v)
	}
	scale := math.Pow(10, float64(-exp))
	return math.Round(v*scale) / scale
}

// FailedThresholds returns the results that did not pass.
func FailedThresholds(results []ThresholdResult) []ThresholdResult {
	var out []ThresholdResult
	for _, r := range results {
		if !r.Pass {
			out = append(out, r)
		}
	}
	return out
}

// WriteThresholds prints the thresholds' outcome for a terminal, one line
// each, then how many failed.
func WriteThresholds(w io.Writer, results []ThresholdResult) error {
	if len(results) == 0 {
		return nil
	}
	ew := &stickyErrWriter{w: w}
	fmt.Fprintln(ew, "thresholds:")
	for _, r := range results {
		mark := "ok  "
		if !r.Pass {
			mark = "FAIL"
		}
		fmt.Fprintf(ew, "  %s %s %s", mark, r.Metric, r.Condition)
		if r.Measurable {
			fmt.Fprintf(ew, ": %s", r.MeasuredText())
		} else {
			fmt.Fprint(ew, ": not measured")
		}
		if r.Why != "" {
			fmt.Fprintf(ew, " (%s)", r.Why)
		}
		fmt.Fprintln(ew)
	}
	if failed := len(FailedThresholds(results)); failed > 0 {
		fmt.Fprintf(ew, "%d of %d thresholds failed\n", failed, len(results))
	}
	return ew.err
}

// CheckThresholdMetrics rejects what the scenario package cannot check on
// its own: a finding.<rule-id> threshold naming no registered rule, which
// would otherwise pass forever as "absent"; rules are every rule firedrill
// has. It returns scenario.Errors, each at the threshold's file:line:col.
func CheckThresholdMetrics(sc *scenario.Scenario, rules []diagnose.Rule) error {
	var errs scenario.Errors
	var known []string
	for _, r := range rules {
		if !slices.Contains(known, r.ID()) {
			known = append(known, r.ID())
		}
	}
	sort.Strings(known)
	for _, t := range sc.Thresholds {
		scope, id, _ := t.Split()
		if scope != "finding" || slices.Contains(known, id) {
			continue
		}
		msg := fmt.Sprintf("threshold %s: no diagnosis rule %q", t.Metric, id)
		if c := closestRule(id, known); c != "" {
			msg += fmt.Sprintf("; did you mean %q?", "finding."+c)
		}
		hint := "rules: " + strings.Join(known, ", ")
		if len(known) == 0 {
			hint = "this firedrill has no diagnosis rules yet"
		}
		errs = append(errs, &scenario.Error{File: sc.File, Pos: t.Pos, Msg: msg, Hint: hint})
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// closestRule returns the known rule id within edit distance 2 of id, if
// exactly one is closest.
func closestRule(id string, known []string) string {
	best, bestD, ties := "", 3, 0
	for _, k := range known {
		d := editDistance(id, k)
		switch {
		case d < bestD:
			best, bestD, ties = k, d, 0
		case d == bestD:
			ties++
		}
	}
	if ties > 0 {
		return ""
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// EvaluateThresholds checks a scenario's thresholds against a run and its
// findings. Client metrics come from the run's summary, or from its
// intervals when the run did not finish; database metrics from the
// sampled series over the whole run. A metric that cannot be measured
// (a workload that did not run, a sampler that did not run) fails, with
// the reason in Why.
func EvaluateThresholds(sc []scenario.Threshold, run *timeline.Run, findings []diagnose.Finding, rules []diagnose.Rule) []ThresholdResult {
	out := make([]ThresholdResult, 0, len(sc))
	totals := map[string]*workloadTotals{}
	for _, t := range sc {
		r := ThresholdResult{Metric: t.Metric, Condition: t.Text}
		base, why, ok := measureThreshold(t, run, findings, rules, totals)
		_, r.Unit = displayValue(t, 0)
		r.Why = why
		if ok {
			r.Measurable = true
			r.Pass = t.Holds(base)
			r.Measured, _ = displayValue(t, base)
		}
		out = append(out, r)
	}
	return out
}

// displayValue converts a measured base value (seconds, a fraction) to
// the threshold's own unit for people to compare with the condition.
func displayValue(t scenario.Threshold, base float64) (float64, string) {
	switch t.Kind {
	case scenario.Latency:
		unit := t.Unit
		if unit == "" {
			unit = "ms"
		}
		scale := map[string]float64{"us": 1e6, "µs": 1e6, "ms": 1e3, "s": 1}[unit]
		if scale == 0 {
			scale, unit = 1e3, "ms"
		}
		return base * scale, unit
	case scenario.Ratio:
		return base * 100, "%"
	case scenario.Throughput:
		return base, "tx/s"
	}
	return base, ""
}

// measureThreshold reads a threshold's metric off the run in the metric's
// base unit (seconds, a fraction, a count); ok is false when it cannot be
// measured, with why.
func measureThreshold(t scenario.Threshold, run *timeline.Run, findings []diagnose.Finding, rules []diagnose.Rule, totals map[string]*workloadTotals) (value float64, why string, ok bool) {
	scope, name, param := t.Split()
	// "<service>.service.<metric>" is read off the service's series by
	// the measure the scenario's loader put on the threshold.
	if name == "service" && t.Measure != nil {
		return t.Measure(run, scope)
	}
	// "<target>.db.<metric>" is a database metric of one target of a run
	// of several, measured on its view (before "db.<metric>": a target
	// may be called db, and no database metric is).
	if _, ok := run.Manifest.NamedTarget(scope); ok && name == "db" {
		_, param, _ := strings.Cut(param, ".")
		return measureDB(t, run.ForTarget(scope), param)
	}
	switch scope {
	case "finding":
		if !diagnose.Known(rules, name) {
			return 0, fmt.Sprintf("no diagnosis rule %q exists: it could never report", name), false
		}
		n := 0
		for _, f := range findings {
			if f.Rule == name {
				n++
			}
		}
		return float64(n), "", true
	case "db":
		return measureDB(t, run, param)
	}
	wt, found := totals[scope]
	if !found {
		wt = totalsOf(run, scope)
		totals[scope] = wt
	}
	if wt == nil {
		return 0, fmt.Sprintf("workload %q did not run", scope), false
	}
	return measureWorkload(wt, name)
}

func measureWorkload(wt *workloadTotals, name string) (float64, string, bool) {
	switch name {
	case "tps":
		if wt.duration <= 0 {
			return 0, "the workload ran for no measurable time", false
		}
		return wt.tps, "", true
	case "count":
		return float64(wt.count), "", true
	case "failed":
		return float64(wt.failed), "", true
	case "error_rate":
		if wt.count+wt.failed == 0 {
			return 0, "no transaction completed or failed", false
		}
		return float64(wt.failed) / float64(wt.count+wt.failed), "", true
	case "pool_wait_p99":
		if !wt.hasPool {
			return 0, "the workload recorded no pool waits", false
		}
		return float64(wt.pool.P99) / 1e6, "", true
	}
	if wt.count == 0 {
		return 0, "no transaction succeeded: there is no latency to judge", false
	}
	p := wt.latency
	us, known := map[string]int64{"p50": p.P50, "p90": p.P90, "p95": p.P95, "p99": p.P99, "p999": p.P999, "max": p.Max}[name]
	if !known {
		return 0, fmt.Sprintf("firedrill cannot measure workload metric %q", name), false
	}
	return float64(us) / 1e6, "", true
}

// measureDB reads a database metric off run (one target's view in a run
// of several) with the measure its kind registered, which the scenario's
// loader put on the threshold.
func measureDB(t scenario.Threshold, run *timeline.Run, param string) (float64, string, bool) {
	if t.Measure == nil {
		return 0, fmt.Sprintf("firedrill cannot measure database metric %q: no kind of database registered it", t.Metric), false
	}
	return t.Measure(run, param)
}

// workloadTotals are one workload's whole-run numbers, from the summary or
// added up from the intervals of a run that did not finish.
type workloadTotals struct {
	name                   string
	count, failed, skipped int64
	late, retried, retries int64
	duration, tps          float64
	latency                timeline.Percentiles
	hasPool                bool
	pool                   timeline.Percentiles
	errors                 []timeline.ErrorSummary
	fromIntervals          bool
}

// totalsOf returns a workload's totals, nil if it has neither a summary
// nor intervals.
func totalsOf(run *timeline.Run, name string) *workloadTotals {
	if run.Summary != nil {
		for _, ws := range run.Summary.Workloads {
			if ws.Name != name {
				continue
			}
			return &workloadTotals{
				name: name, count: ws.Count, failed: ws.Failed, skipped: ws.Skipped,
				late: ws.Late, retried: ws.Retried, retries: ws.Retries,
				duration: ws.Duration, tps: ws.TPS, latency: ws.LatencyPct,
				hasPool: ws.PoolWait != nil, pool: ws.PoolPct, errors: ws.Errors,
			}
		}
	}
	ivs := run.WorkloadIntervals(name)
	if len(ivs) == 0 {
		return nil
	}
	wt := &workloadTotals{name: name, fromIntervals: true}
	lat, pool := timeline.NewHistogram(), timeline.NewHistogram()
	errs := map[string]int64{}
	for i := range ivs {
		iv := &ivs[i]
		wt.count += iv.Count
		wt.failed += iv.Failed
		wt.skipped += iv.Skipped
		wt.late += iv.Late
		wt.retried += iv.Retried
		wt.retries += iv.Retries
		if iv.Latency != nil {
			lat.Merge(iv.Latency)
		}
		if iv.PoolWait != nil {
			pool.Merge(iv.PoolWait)
			wt.hasPool = true
		}
		for code, n := range iv.Errors {
			errs[code] += n
		}
	}
	wt.duration = ivs[len(ivs)-1].End - ivs[0].Start
	if wt.duration > 0 {
		wt.tps = float64(wt.count) / wt.duration
	}
	wt.latency = lat.Percentiles()
	if wt.hasPool {
		wt.pool = pool.Percentiles()
	}
	codes := make([]string, 0, len(errs))
	for code := range errs {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		wt.errors = append(wt.errors, timeline.ErrorSummary{Code: code, Count: errs[code]})
	}
	return wt
}
