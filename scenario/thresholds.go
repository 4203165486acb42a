package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/timeline"
)

// This file is the table of metrics a threshold may name. A new workload
// metric is one new line in WorkloadMetrics (and its evaluation where
// thresholds are checked); a database metric is one line in its kind's
// table (KindOptions.DBMetrics), which carries how to measure it. The
// loader, the errors and the README table follow from the line.

// MetricKind is what a metric measures; it decides which units a
// threshold on it may be written in.
type MetricKind uint8

// The kinds of metric.
const (
	// Count is a number of things (transactions, deadlocks): no unit.
	Count MetricKind = iota + 1
	// Throughput is per second (transactions/s): no unit.
	Throughput
	// Latency is a time: us (or µs), ms or s are required.
	Latency
	// Ratio is a share: written as a percentage ("< 0.1%"), % required.
	Ratio
	// Presence is whether something happened: only absent or present.
	Presence
)

// String names the kind for messages.
func (k MetricKind) String() string {
	switch k {
	case Count:
		return "count"
	case Throughput:
		return "throughput"
	case Latency:
		return "latency"
	case Ratio:
		return "ratio"
	case Presence:
		return "presence"
	}
	return fmt.Sprintf("MetricKind(%d)", uint8(k))
}

// MetricSpec describes one metric a threshold may name.
type MetricSpec struct {
	Name string // the last part of the metric: "p99", "deadlocks"
	Kind MetricKind
	// Params, when set, are the values of the metric's parameter, a
	// further dotted part ("db.slru_hit_rate_min.MultiXactMember"); the
	// parameter is then required. Matching ignores letter case, and
	// ParamAliases maps other spellings (lower-cased) to these.
	Params       []string
	ParamAliases map[string]string
	// NeedsPool marks workload metrics that only a workload with a pool
	// has.
	NeedsPool bool
	Doc       string // one line for the README and messages
	// Measure reads a database metric off a run; each kind sets it on the
	// metrics it registers (KindOptions.DBMetrics). Workload metrics have
	// none: the report reads them from the clients' numbers.
	Measure Measure
}

// Measure reads one database metric off run, in the metric's base unit
// (seconds, a fraction, a count): run is the run of a scenario of one
// target, or one target's view of a run of several (timeline.Run's
// ForTarget), so a kind reads its own sources. param is the metric's
// parameter as the table spells it ("" for none). When the run holds
// nothing to measure, ok is false and why says what is missing; why may
// also explain how a measured value was read.
type Measure func(run *timeline.Run, param string) (value float64, why string, ok bool)

// WorkloadMetrics are the client-side metrics of every workload, named
// "<workload>.<name>", over the workload's whole window.
var WorkloadMetrics = []MetricSpec{
	{Name: "tps", Kind: Throughput, Doc: "transactions completed per second"},
	{Name: "count", Kind: Count, Doc: "transactions completed"},
	{Name: "failed", Kind: Count, Doc: "transactions failed (after retries)"},
	{Name: "error_rate", Kind: Ratio, Doc: "failed / (completed + failed)"},
	{Name: "p50", Kind: Latency, Doc: "median transaction latency"},
	{Name: "p90", Kind: Latency, Doc: "90th percentile latency"},
	{Name: "p95", Kind: Latency, Doc: "95th percentile latency"},
	{Name: "p99", Kind: Latency, Doc: "99th percentile latency"},
	{Name: "p999", Kind: Latency, Doc: "99.9th percentile latency"},
	{Name: "max", Kind: Latency, Doc: "highest latency"},
	{Name: "pool_wait_p99", Kind: Latency, NeedsPool: true, Doc: "99th percentile wait for a pooled connection (workloads with pool)"},
}

// findingPrefix names the findings of a diagnosis rule as a metric:
// "finding.<rule-id>", with absent or present.
const findingPrefix = "finding"

// dbPrefix names the database metrics.
const dbPrefix = "db"

// reservedWorkloadNames cannot name a workload: thresholds read them as
// the scope of a metric.
var reservedWorkloadNames = []string{dbPrefix, findingPrefix}

// thresholdOps are the comparisons a condition may use, longest first so
// that "<=" is not read as "<".
var thresholdOps = []string{"<=", ">=", "==", "!=", "<", ">"}

// unitScales convert a threshold's unit to the metric's base unit
// (seconds for latencies, a fraction for ratios), by kind.
var unitScales = map[MetricKind]map[string]float64{
	Latency: {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1},
	Ratio:   {"%": 0.01},
}

// unitsByLength lists every unit, longest first, for splitting "50ms".
var unitsByLength = []string{"us", "µs", "ms", "s", "%"}

// Split returns the parts of the threshold's metric: the scope (a workload,
// "db", a target or "finding"), the metric's name and its parameter, if
// any. A target's database metric splits as the target, "db" and the rest
// ("cache.db.used_memory" is cache, db, used_memory).
func (t Threshold) Split() (scope, name, param string) {
	scope, rest, _ := strings.Cut(t.Metric, ".")
	name, param, _ = strings.Cut(rest, ".")
	if scope == findingPrefix {
		return scope, rest, ""
	}
	return scope, name, param
}

// BaseValue is Value in the metric's base unit: seconds for a latency, a
// fraction for a ratio ("0.1%" is 0.001), the number itself otherwise.
func (t Threshold) BaseValue() float64 {
	if scale, ok := unitScales[t.Kind][t.Unit]; ok {
		return t.Value * scale
	}
	return t.Value
}

// Holds reports whether a measured value, in the metric's base unit,
// meets the threshold; for absent and present, the value is how many
// times it happened.
func (t Threshold) Holds(measured float64) bool {
	want := t.BaseValue()
	switch t.Op {
	case "<":
		return measured < want
	case "<=":
		return measured <= want
	case ">":
		return measured > want
	case ">=":
		return measured >= want
	case "==":
		return measured == want
	case "!=":
		return measured != want
	case OpAbsent:
		return measured == 0
	case OpPresent:
		return measured > 0
	}
	return false
}

// The operators of presence conditions.
const (
	OpAbsent  = "absent"
	OpPresent = "present"
)

// metricScope is what a threshold's metric may name: the scenario's
// workloads, its targets (none in a scenario of one) and the database
// metrics of each target's kind.
type metricScope struct {
	workloads []Workload
	targets   []string
	// services are the scenario's services' names.
	services []string
	// db gives the kind of a target ("" for the one of a scenario of one)
	// and the database metrics a threshold may name on it.
	db func(target string) (kind string, metrics []MetricSpec)
}

// lookupMetric finds the spec of a metric name in scope. It returns the
// canonical metric (the parameter spelt as in the table) or a message and
// a hint.
func lookupMetric(metric string, scope metricScope) (canonical string, spec MetricSpec, msg, hint string) {
	first, rest, ok := strings.Cut(metric, ".")
	if !ok || rest == "" || first == "" {
		return "", MetricSpec{}, fmt.Sprintf("bad metric %q", metric),
			"want " + scope.shapes() + ", as in oltp.p99"
	}
	if dbName, isDB := strings.CutPrefix(rest, dbPrefix+"."); isDB && len(scope.targets) > 0 {
		// "<target>.db.<metric>": before finding and the workloads, as
		// a target may be called anything a workload may not.
		if slices.Contains(scope.targets, first) {
			return lookupDB(metric, first, dbName, scope)
		}
		if !slices.ContainsFunc(scope.workloads, func(w Workload) bool { return w.Name == first }) && first != findingPrefix {
			mean, _ := suggest(first, scope.targets)
			return "", MetricSpec{}, fmt.Sprintf("metric %q names no target %q%s", metric, first, mean),
				"a database metric of a scenario of several is <target>.db.<metric>; targets: " + strings.Join(scope.targets, ", ")
		}
	}
	if name, isService := strings.CutPrefix(rest, servicePrefix+"."); isService && slices.Contains(scope.services, first) {
		// "<service>.service.<metric>": before the workloads, as a
		// service may have a workload's name.
		return lookupIn(metric, first+"."+servicePrefix, name, ServiceMetrics)
	}
	switch first {
	case findingPrefix:
		if !validName(rest, "._-") {
			return "", MetricSpec{}, fmt.Sprintf("bad rule id %q in metric %q", rest, metric), "rule ids are lower case, as in finding.deadlock"
		}
		return metric, MetricSpec{Name: rest, Kind: Presence}, "", ""
	case dbPrefix:
		if len(scope.targets) > 0 {
			return "", MetricSpec{}, fmt.Sprintf("metric %q: a scenario of several targets names the target of a database metric", metric),
				fmt.Sprintf("as in %s.%s; targets: %s", scope.targets[0], metric, strings.Join(scope.targets, ", "))
		}
		return lookupDB(metric, "", rest, scope)
	}
	var names []string
	for _, w := range scope.workloads {
		if w.Name != first {
			names = append(names, w.Name)
			continue
		}
		canonical, spec, msg, hint = lookupIn(metric, first, rest, WorkloadMetrics)
		if msg == "" && spec.NeedsPool && w.Pool == 0 {
			return "", MetricSpec{}, fmt.Sprintf("metric %q: workload %q has no pool", metric, first), "set pool on the workload, or remove the threshold"
		}
		return canonical, spec, msg, hint
	}
	mean, _ := suggest(first, append(names, reservedWorkloadNames...))
	return "", MetricSpec{}, fmt.Sprintf("metric %q names no workload %q%s", metric, first, mean),
		"a metric is " + scope.shapes() + "; workloads: " + strings.Join(names, ", ")
}

// lookupDB finds a database metric ("deadlocks", "slru_hit_rate_min.Xact")
// among those of target's kind ("" for the one target of a scenario of
// one).
func lookupDB(metric, target, rest string, scope metricScope) (string, MetricSpec, string, string) {
	prefix := dbPrefix
	if target != "" {
		prefix = target + "." + dbPrefix
	}
	var kind string
	var table []MetricSpec
	if scope.db != nil {
		kind, table = scope.db(target)
	}
	if len(table) == 0 {
		what := "the target"
		if target != "" {
			what = fmt.Sprintf("target %q", target)
		}
		if kind != "" {
			what += fmt.Sprintf(" (%s)", kind)
		}
		return "", MetricSpec{}, fmt.Sprintf("metric %q: %s has no database metrics a threshold may name", metric, what),
			"judge its workloads (<workload>.p99) or its findings (finding.<rule-id>) instead"
	}
	canonical, spec, msg, hint := lookupIn(metric, prefix, rest, table)
	if msg != "" && kind != "" {
		hint = strings.Replace(hint, prefix+" metrics:", fmt.Sprintf("%s metrics of %s:", prefix, kind), 1)
	}
	return canonical, spec, msg, hint
}

// shapes names the forms a metric may take, for hints.
func (s metricScope) shapes() string {
	if len(s.targets) > 0 {
		return "<workload>.<metric>, <target>.db.<metric> or finding.<rule-id>"
	}
	return "<workload>.<metric>, db.<metric> or finding.<rule-id>"
}

// lookupIn finds rest ("p99", "slru_hit_rate_min.Xact") in a table.
func lookupIn(metric, scope, rest string, table []MetricSpec) (string, MetricSpec, string, string) {
	name, param, hasParam := strings.Cut(rest, ".")
	names := make([]string, len(table))
	for i, spec := range table {
		names[i] = spec.Name
		if spec.Name != name {
			continue
		}
		if spec.Params == nil {
			if hasParam {
				return "", MetricSpec{}, fmt.Sprintf("metric %q: %s.%s takes no parameter", metric, scope, name), ""
			}
			return metric, spec, "", ""
		}
		if !hasParam || param == "" {
			return "", MetricSpec{}, fmt.Sprintf("metric %q needs a parameter", metric),
				fmt.Sprintf("as in %s.%s.%s; one of %s", scope, name, spec.Params[0], strings.Join(spec.Params, ", "))
		}
		for _, p := range spec.Params {
			if strings.EqualFold(p, param) {
				return scope + "." + name + "." + p, spec, "", ""
			}
		}
		if p, ok := spec.ParamAliases[strings.ToLower(param)]; ok {
			return scope + "." + name + "." + p, spec, "", ""
		}
		mean, _ := suggest(param, spec.Params)
		if c := closest(param, spec.Params); c != "" {
			mean = fmt.Sprintf("; did you mean %q?", scope+"."+name+"."+c)
		}
		return "", MetricSpec{}, fmt.Sprintf("metric %q: unknown parameter %q%s", metric, param, mean),
			"one of " + strings.Join(spec.Params, ", ")
	}
	mean, choices := suggest(name, names)
	if c := closest(name, names); c != "" {
		mean = fmt.Sprintf("; did you mean %q?", scope+"."+c)
	}
	hint := ""
	if choices != "" {
		hint = scope + " metrics: " + choices
	}
	return "", MetricSpec{}, fmt.Sprintf("unknown metric %q%s", metric, mean), hint
}

// parseCondition reads a threshold's condition ("< 50ms", "<= 0.1%",
// "== 0", "absent", "present") and checks its unit against the metric's
// kind. It returns the message and hint of a problem, if any.
func parseCondition(text string, kind MetricKind) (t Threshold, msg, hint string) {
	t.Text = text
	cond := strings.TrimSpace(text)
	if cond == OpAbsent || cond == OpPresent {
		if kind != Presence {
			return t, fmt.Sprintf("condition %q applies only to finding.<rule-id>", cond),
				"compare a number instead, as in == 0"
		}
		t.Op = cond
		return t, "", ""
	}
	if kind == Presence {
		return t, fmt.Sprintf("bad condition %q for a finding", text), "want absent or present"
	}
	for _, op := range thresholdOps {
		if strings.HasPrefix(cond, op) {
			t.Op = op
			break
		}
	}
	if t.Op == "" {
		hint := "want an operator (<, <=, >, >=, ==, !=), a number and a unit, as in < 50ms"
		if strings.HasPrefix(cond, "=") {
			hint = "write == for equality"
		}
		return t, fmt.Sprintf("bad condition %q", text), hint
	}
	rest := strings.TrimSpace(cond[len(t.Op):])
	number := rest
	for _, unit := range unitsByLength {
		if n, ok := strings.CutSuffix(rest, unit); ok {
			number, t.Unit = strings.TrimSpace(n), unit
			break
		}
	}
	v, err := strconv.ParseFloat(number, 64)
	if err != nil || !isFinite(v) {
		return t, fmt.Sprintf("bad condition %q: %q is not a number with a unit", text, rest),
			"want an operator (<, <=, >, >=, ==, !=), a number and a unit, as in < 50ms"
	}
	t.Value = v
	units := unitScales[kind]
	switch {
	case t.Unit == "" && len(units) > 0:
		return t, fmt.Sprintf("condition %q needs a unit: the metric is a %s", text, kind), "as in " + exampleCondition(kind)
	case t.Unit != "" && units[t.Unit] == 0:
		if len(units) == 0 {
			return t, fmt.Sprintf("condition %q: a %s takes no unit", text, kind), "as in " + exampleCondition(kind)
		}
		return t, fmt.Sprintf("condition %q: unit %q does not fit a %s", text, t.Unit, kind), "as in " + exampleCondition(kind)
	}
	return t, "", ""
}

// exampleCondition shows a user a condition of the right shape.
func exampleCondition(kind MetricKind) string {
	switch kind {
	case Latency:
		return "< 50ms"
	case Ratio:
		return "< 0.1%"
	case Throughput:
		return ">= 1000"
	}
	return "== 0"
}

// CheckMetricSpecs checks a table of metrics as the loader relies on it:
// unique names of lower-case letters, digits and _, a kind other than
// presence and a doc line each, and aliases (lower case) of parameters
// only. It returns one error per problem; each kind's table of database
// metrics is checked with it.
func CheckMetricSpecs(table []MetricSpec) []error {
	var errs []error
	seen := make(map[string]bool)
	for _, m := range table {
		if seen[m.Name] || !validName(m.Name, "_") || m.Kind == 0 || m.Kind == Presence || m.Doc == "" {
			errs = append(errs, fmt.Errorf("metric %q: a duplicate, a bad name, no kind, presence or no doc line", m.Name))
		}
		seen[m.Name] = true
		for alias, p := range m.ParamAliases {
			if alias != strings.ToLower(alias) || !slices.Contains(m.Params, p) {
				errs = append(errs, fmt.Errorf("metric %s: alias %q names %q, not a parameter", m.Name, alias, p))
			}
		}
	}
	return errs
}
