package drills

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/drills/measure"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// Span is a stretch of a run, [From, To) in seconds since its start.
type Span struct{ From, To float64 }

// anchor is one end of a window, as drill.yaml writes it.
type anchor struct {
	event  string // empty: the run itself
	point  string // "start" (the run's start, or the event's start mark), "end", "due"
	offset time.Duration
}

var (
	endAnchorRE   = regexp.MustCompile(`^end([+-].+)?$`)
	eventAnchorRE = regexp.MustCompile(`^([a-z0-9._-]+?)\.(start|end|due)([+-].+)?$`)
)

func parseAnchor(text string) (anchor, error) {
	text = strings.TrimSpace(text)
	var a anchor
	offset := ""
	switch {
	case text == "":
		return a, errors.New(`missing (a time such as "10s", "end", or "EVENT.start", "EVENT.end", "EVENT.due", each with an optional +/- offset)`)
	case endAnchorRE.MatchString(text):
		m := endAnchorRE.FindStringSubmatch(text)
		a.point, offset = "end", m[1]
	case eventAnchorRE.MatchString(text):
		m := eventAnchorRE.FindStringSubmatch(text)
		a.event, a.point, offset = m[1], m[2], m[3]
	default:
		d, err := scenario.ParseDuration(text)
		if err != nil {
			return a, fmt.Errorf(`%q: want a time such as "10s", "end", or "EVENT.start", "EVENT.end", "EVENT.due", each with an optional +/- offset`, text)
		}
		a.point, a.offset = "start", d
		return a, nil
	}
	if offset != "" {
		d, err := scenario.ParseDuration(offset[1:])
		if err != nil {
			return a, fmt.Errorf("%q: offset %q: %v", text, offset, err)
		}
		if offset[0] == '-' {
			d = -d
		}
		a.offset = d
	}
	return a, nil
}

// Events names the events the drill's windows refer to. A variant whose
// scenario lacks one cannot be measured in that window (the journal's
// build window exists only where the index is built).
func (d Drill) Events() []string {
	var names []string
	for _, w := range d.Windows {
		for _, text := range []string{w.From, w.To} {
			if a, err := parseAnchor(text); err == nil && a.event != "" && !slices.Contains(names, a.event) {
				names = append(names, a.event)
			}
		}
	}
	return names
}

// Window returns the drill's window called name.
func (d Drill) Window(name string) (Window, bool) {
	for _, w := range d.Windows {
		if w.Name == name {
			return w, true
		}
	}
	return Window{}, false
}

// Span places a window on a run: event anchors come from the run's marks
// (start, end) and manifest (due); with quick, offsets are scaled as the
// scenario's times were. The empty name is the whole run.
func (d Drill) Span(run *timeline.Run, window string, quick bool) (Span, error) {
	if window == "" {
		return Span{0, diagnose.RunEnd(run)}, nil
	}
	w, ok := d.Window(window)
	if !ok {
		return Span{}, fmt.Errorf("no window %q", window)
	}
	scale := 1.0
	if quick {
		scale = d.Quick.TimeScale
	}
	from, err := place(run, w.From, scale)
	if err != nil {
		return Span{}, fmt.Errorf("window %s: from: %w", w.Name, err)
	}
	to, err := place(run, w.To, scale)
	if err != nil {
		return Span{}, fmt.Errorf("window %s: to: %w", w.Name, err)
	}
	if to <= from {
		return Span{}, fmt.Errorf("window %s: empty in this run (%.1f–%.1f s)", w.Name, from, to)
	}
	return Span{from, to}, nil
}

func place(run *timeline.Run, text string, scale float64) (float64, error) {
	a, err := parseAnchor(text)
	if err != nil {
		return 0, err
	}
	offset := a.offset.Seconds() * scale
	if a.event == "" {
		if a.point == "end" {
			return diagnose.RunEnd(run) + offset, nil
		}
		return offset, nil
	}
	if a.point == "due" {
		for _, e := range run.Manifest.Events {
			if e.Name == a.event {
				return e.At + e.Duration + offset, nil
			}
		}
		return 0, fmt.Errorf("the run has no event %q", a.event)
	}
	phase := timeline.PhaseStart
	if a.point == "end" {
		phase = timeline.PhaseEnd
	}
	for _, m := range run.Marks {
		if m.Event == a.event && m.Phase == phase {
			return m.T + offset, nil
		}
	}
	return 0, fmt.Errorf("the run has no %s mark of event %q", phase, a.event)
}

// metricSpec is one measurable value of a run.
type metricSpec struct {
	name, unit string
	// quantile, for latency metrics; 0 otherwise.
	quantile float64
	// kind is a kind's metric (Measures), with the family member named.
	kind   *measure.Metric
	member string
}

// metrics are what expectations and the comparison table measure.
var metrics = []metricSpec{
	{name: "tps", unit: "tx/s"}, // successful transactions per second
	// units_per_s: the drill's unit per second, tps × the variant's
	// per_transaction: what compares a batching variant with the others
	// (orders/s when one transaction is four orders). Check measures it;
	// Measure, which knows no variant, refuses it.
	{name: unitsPerS, unit: "units/s"},
	{name: "count", unit: "tx"},  // successful transactions
	{name: "failed", unit: "tx"}, // failed transactions (after retries)
	{name: "p50", unit: "ms", quantile: 50},
	{name: "p90", unit: "ms", quantile: 90},
	{name: "p95", unit: "ms", quantile: 95},
	{name: "p99", unit: "ms", quantile: 99},
	{name: "p99.9", unit: "ms", quantile: 99.9},
	{name: "max", unit: "ms", quantile: 100},
	// errors: failed tries of every kind (a transaction retried after a
	// deadlock counts each try), from the intervals' error counts.
	{name: "errors", unit: "tries"},
	// failed_connections: the failed tries that were about the
	// connection: refused (the server at its limit), unavailable (down)
	// or lost.
	{name: "failed_connections", unit: "tries"},
	// stalls: client intervals in which a successful transaction took
	// stallMS or more (the whole server stopping, for a Redis target).
	{name: "stalls", unit: "intervals"},
}

// unitsPerS names the metric of the drill's unit per second.
const unitsPerS = "units_per_s"

// stallMS is the latency from which an interval counts in stalls.
const stallMS = 100

// Measure computes a metric over a span of a run, for one workload or
// (workload "") all of them. An interval counts when its middle lies in
// the span. Latencies are in milliseconds, from the intervals' merged
// histograms; a kind's metric reads the run's samples (it ignores the
// workload).
func (ms Measures) Measure(run *timeline.Run, metric, workload string, span Span) (float64, error) {
	spec, ok := ms.lookup(metric)
	if !ok {
		return 0, fmt.Errorf("no metric %q", metric)
	}
	if spec.kind != nil {
		return measureKind(run, spec, span)
	}
	switch spec.name {
	case "stalls":
		return stalls(run, workload, span)
	case unitsPerS:
		return 0, fmt.Errorf("%s is tps × a variant's per_transaction: measure tps", unitsPerS)
	}
	var count, failed, errorTries, connFailures int64
	tps := 0.0
	hist := timeline.NewHistogram()
	seen := false
	for _, name := range workloadNames(run) {
		if workload != "" && name != workload {
			continue
		}
		seen = true
		var n int64
		covered := 0.0
		for _, iv := range run.WorkloadIntervals(name) {
			if mid := (iv.Start + iv.End) / 2; mid < span.From || mid >= span.To {
				continue
			}
			n += iv.Count
			failed += iv.Failed
			for _, e := range iv.Errors {
				errorTries += e
			}
			connFailures += iv.ConnectionFailures()
			covered += iv.End - iv.Start
			if iv.Latency != nil {
				hist.Merge(iv.Latency)
			}
		}
		count += n
		if covered > 0 {
			tps += float64(n) / covered
		}
	}
	if !seen {
		return 0, fmt.Errorf("the run has no workload %q", workload)
	}
	switch {
	case spec.name == "tps":
		return tps, nil
	case spec.name == "count":
		return float64(count), nil
	case spec.name == "failed":
		return float64(failed), nil
	case spec.name == "errors":
		return float64(errorTries), nil
	case spec.name == "failed_connections":
		return float64(connFailures), nil
	case hist.Count() == 0:
		return 0, fmt.Errorf("no successful transaction between %.1f and %.1f s", span.From, span.To)
	case spec.quantile >= 100:
		return float64(hist.Max()) / 1000, nil
	default:
		return float64(hist.Quantile(spec.quantile)) / 1000, nil
	}
}

func workloadNames(run *timeline.Run) []string {
	var names []string
	for _, w := range run.Manifest.Workloads {
		names = append(names, w.Name)
	}
	for _, iv := range run.Intervals {
		if !slices.Contains(names, iv.Workload) {
			names = append(names, iv.Workload)
		}
	}
	return names
}

// condition is "OP NUMBER".
type condition struct {
	op    string
	value float64
}

var conditionRE = regexp.MustCompile(`^\s*(<=|>=|==|!=|<|>)\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*$`)

func parseCondition(text string) (condition, error) {
	m := conditionRE.FindStringSubmatch(text)
	if m == nil {
		return condition{}, fmt.Errorf("%q: want an operator (<, <=, >, >=, ==, !=) and a number, e.g. \"<= 0.7\"", text)
	}
	v, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return condition{}, fmt.Errorf("%q: %v", text, err)
	}
	return condition{op: m[1], value: v}, nil
}

func (c condition) holds(x float64) bool {
	switch c.op {
	case "<":
		return x < c.value
	case "<=":
		return x <= c.value
	case ">":
		return x > c.value
	case ">=":
		return x >= c.value
	case "==":
		return x == c.value
	default:
		return x != c.value
	}
}

func (c condition) String() string { return c.op + " " + strconv.FormatFloat(c.value, 'g', -1, 64) }

// Check is one expectation checked against one variant's run.
type Check struct {
	Variant string
	// Expectation says what must hold, e.g. "finding multixact-slru-thrash
	// reported" or "tps in hold / before <= 0.7".
	Expectation string
	Pass        bool
	// Skipped is set when the expectation could not be judged: it compares
	// with a variant that did not run.
	Skipped bool
	// Got says what the run showed.
	Got string
}

// Check tests a variant's expectations on its run and findings; others
// holds the runs of the drill's other variants, by name, for the
// expectations that compare with one (nil if none ran); ms are the
// metrics the expectations may name. Quick uses each
// metric's quick condition and scales the windows' offsets. An expected
// rule that is not among rules (every rule firedrill has) fails, saying so.
func (d Drill) Check(v Variant, run *timeline.Run, findings []diagnose.Finding, rules []diagnose.Rule, quick bool, others map[string]*timeline.Run, ms Measures) []Check {
	var out []Check
	add := func(what string, pass bool, got string) {
		out = append(out, Check{Variant: v.Name, Expectation: what, Pass: pass, Got: got})
	}
	if run.Manifest.Status != timeline.StatusCompleted {
		add("the run completes", false, fmt.Sprintf("status %s: %s", run.Manifest.Status, run.Manifest.Error))
	}
	byRule := map[string][]diagnose.Finding{}
	for _, f := range findings {
		byRule[f.Rule] = append(byRule[f.Rule], f)
	}
	for _, id := range v.Expect.Findings {
		fs := byRule[id]
		switch {
		case len(fs) > 0:
			add("finding "+id+" reported", true, describeFindings(fs))
		case !diagnose.Known(rules, id):
			add("finding "+id+" reported", false, "not reported: no rule "+id+" is registered (yet)")
		default:
			add("finding "+id+" reported", false, "not reported")
		}
	}
	for _, id := range v.Expect.Absent {
		fs := byRule[id]
		if len(fs) > 0 {
			add("no finding "+id, false, "reported: "+describeFindings(fs))
		} else {
			add("no finding "+id, true, "not reported")
		}
	}
	var unexpected, allowed []string
	allowedSeen := map[string]bool{}
	for _, f := range findings {
		if f.Severity == diagnose.Info || slices.Contains(v.Expect.Findings, f.Rule) || slices.Contains(v.Expect.Absent, f.Rule) {
			continue
		}
		if a, ok := v.Expect.Allows(f.Rule); ok {
			if !allowedSeen[f.Rule] {
				allowedSeen[f.Rule] = true
				allowed = append(allowed, fmt.Sprintf("%s (%s, because %s)", f.Rule, f.Severity, a.Why))
			}
			continue
		}
		unexpected = append(unexpected, fmt.Sprintf("%s (%s: %s)", f.Rule, f.Severity, f.Headline))
	}
	got := "none"
	if len(unexpected) > 0 {
		got = strings.Join(unexpected, "; ")
	}
	if len(allowed) > 0 {
		got += "; allowed: " + strings.Join(allowed, "; ")
	}
	add("no other warning or critical finding", len(unexpected) == 0, got)
	for _, e := range v.Expect.Events {
		what := fmt.Sprintf("event %s ends without error", e.Event)
		if e.Outcome != "" {
			what = fmt.Sprintf("event %s ends: %q", e.Event, e.Outcome)
		}
		end, ok := endMark(run, e.Event)
		switch {
		case !ok:
			add(what, false, "the run has no end mark of event "+e.Event)
		case end.Error != "":
			add(what, false, "error: "+end.Error)
		default:
			add(what, strings.Contains(end.Outcome, e.Outcome), fmt.Sprintf("at %.1f s: %s", end.T, end.Outcome))
		}
	}
	for _, m := range v.Expect.Metrics {
		want := m.Want
		if quick && m.Quick != "" {
			if m.Quick == QuickSkip {
				continue
			}
			want = m.Quick
		}
		c, _ := parseCondition(want) // Validate checked it
		what := describeMetric(m) + " " + c.String()
		value, got, err := d.measureExpect(run, v, m, quick, ms)
		if err != nil {
			add(what, false, err.Error())
			continue
		}
		if m.CompareTo != "" {
			other := others[m.CompareTo]
			if other == nil {
				out = append(out, Check{Variant: v.Name, Expectation: what, Skipped: true,
					Got: "variant " + m.CompareTo + " did not run"})
				continue
			}
			otherVariant, _ := d.Variant(m.CompareTo) // Validate checked it
			otherValue, otherGot, err := d.measureExpect(other, otherVariant, m, quick, ms)
			if err == nil && otherValue == 0 {
				err = fmt.Errorf("%s is 0 in %s: no ratio", describeMetric(MetricExpect{Metric: m.Metric, Workload: m.Workload, Window: m.Window, RelativeTo: m.RelativeTo}), m.CompareTo)
			}
			if err != nil {
				add(what, false, fmt.Sprintf("%s: %v", m.CompareTo, err))
				continue
			}
			ratio := value / otherValue
			got = fmt.Sprintf("%s: %s here, %s in %s", strconv.FormatFloat(ratio, 'g', 3, 64), got, otherGot, m.CompareTo)
			value = ratio
		}
		add(what, c.holds(value), got)
	}
	return out
}

func endMark(run *timeline.Run, event string) (timeline.Mark, bool) {
	for _, m := range run.Marks {
		if m.Event == event && m.Phase == timeline.PhaseEnd {
			return m, true
		}
	}
	return timeline.Mark{}, false
}

func describeMetric(m MetricExpect) string {
	s := m.Metric
	if m.Workload != "" {
		s = m.Workload + "." + s
	}
	switch {
	case m.Window != "" && m.RelativeTo != "":
		s += " in " + m.Window + " / in " + m.RelativeTo
	case m.RelativeTo != "":
		s += " over the run / in " + m.RelativeTo
	case m.Window != "":
		s += " in " + m.Window
	}
	if m.CompareTo != "" {
		s = "(" + s + ") here ÷ in " + m.CompareTo
	}
	return s
}

// measureExpect measures an expectation's value on variant v's run and
// says how it was obtained.
func (d Drill) measureExpect(run *timeline.Run, v Variant, m MetricExpect, quick bool, ms Measures) (float64, string, error) {
	spec, _ := ms.lookup(m.Metric)
	metric, factor := m.Metric, 1.0
	if metric == unitsPerS {
		metric, factor = "tps", float64(v.UnitsPerTransaction())
	}
	at := func(window string) (float64, Span, error) {
		span, err := d.Span(run, window, quick)
		if err != nil {
			return 0, span, err
		}
		v, err := ms.Measure(run, metric, m.Workload, span)
		return v * factor, span, err
	}
	value, span, err := at(m.Window)
	if err != nil {
		return 0, "", err
	}
	unit := ""
	switch {
	case spec.name == unitsPerS && d.Unit != "":
		unit = " " + d.Unit + "/s"
	case spec.unit != "":
		unit = " " + spec.unit
	}
	if m.RelativeTo == "" {
		return value, fmt.Sprintf("%s%s (%.0f–%.0f s)", FormatValue(value), unit, span.From, span.To), nil
	}
	base, baseSpan, err := at(m.RelativeTo)
	if err != nil {
		return 0, "", err
	}
	if base == 0 {
		return 0, "", fmt.Errorf("%s in %s is 0: no ratio", m.Metric, m.RelativeTo)
	}
	ratio := value / base
	return ratio, fmt.Sprintf("%s: %s%s in %s (%.0f–%.0f s) vs %s%s in %s (%.0f–%.0f s)", strconv.FormatFloat(ratio, 'g', 3, 64),
		FormatValue(value), unit, nonEmpty(m.Window, "the run"), span.From, span.To,
		FormatValue(base), unit, m.RelativeTo, baseSpan.From, baseSpan.To), nil
}

func nonEmpty(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// FormatValue prints a measured value with as many digits as it needs.
func FormatValue(v float64) string {
	switch a := math.Abs(v); {
	case a == math.Trunc(a) && a < 1e9:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func describeFindings(fs []diagnose.Finding) string {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	var parts []string
	for _, f := range fs {
		parts = append(parts, fmt.Sprintf("%s, %.0f–%.0f s", f.Severity, f.Start, f.End))
	}
	return strings.Join(parts, "; ")
}

// sumSeries adds up a sampled series over the samples taken in the span.
// stalls counts the moments (interval starts) in the span at which a
// transaction of the workload (or of any) took stallMS or more.
func stalls(run *timeline.Run, workload string, span Span) (float64, error) {
	moments := map[float64]bool{}
	seen := false
	for _, name := range workloadNames(run) {
		if workload != "" && name != workload {
			continue
		}
		seen = true
		for _, iv := range run.WorkloadIntervals(name) {
			if mid := (iv.Start + iv.End) / 2; mid < span.From || mid >= span.To {
				continue
			}
			if iv.LatencyPct.Max >= stallMS*1000 {
				moments[iv.Start] = true
			}
		}
	}
	if !seen {
		return 0, fmt.Errorf("the run has no workload %q", workload)
	}
	return float64(len(moments)), nil
}
