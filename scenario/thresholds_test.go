package scenario

import (
	"slices"
	"strings"
	"testing"
)

func TestParseCondition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		kind MetricKind
		op   string
		val  float64
		unit string
		err  string // a substring of the message; "" for none
	}{
		{"< 50ms", Latency, "<", 50, "ms", ""},
		{"<=0.5s", Latency, "<=", 0.5, "s", ""},
		{"> 250 us", Latency, ">", 250, "us", ""},
		{"< 250µs", Latency, "<", 250, "µs", ""},
		{"< 0.1%", Ratio, "<", 0.1, "%", ""},
		{">= 99.9 %", Ratio, ">=", 99.9, "%", ""},
		{"== 0", Count, "==", 0, "", ""},
		{"!= 0", Count, "!=", 0, "", ""},
		{">= 1e3", Throughput, ">=", 1000, "", ""},
		{"absent", Presence, OpAbsent, 0, "", ""},
		{" present ", Presence, OpPresent, 0, "", ""},
		{"< 50", Latency, "", 0, "", "needs a unit"},    // a latency without a unit is ambiguous
		{"< 0.001", Ratio, "", 0, "", "needs a unit"},   // a ratio too
		{"< 5ms", Count, "", 0, "", "takes no unit"},    // a count takes none
		{"< 5%", Latency, "", 0, "", "does not fit"},    // a latency is not a share
		{"= 0", Count, "", 0, "", "bad condition"},      // == for equality
		{"50ms", Latency, "", 0, "", "bad condition"},   // no operator
		{"< fast", Latency, "", 0, "", "not a number"},  //
		{"< NaN", Count, "", 0, "", "not a number"},     //
		{"< Inf", Count, "", 0, "", "not a number"},     //
		{"absent", Count, "", 0, "", "only to finding"}, // presence only for findings
		{"== 0", Presence, "", 0, "", "for a finding"},  // and findings only presence
		{"<", Count, "", 0, "", "not a number"},
	}
	for _, tt := range tests {
		got, msg, _ := parseCondition(tt.text, tt.kind)
		switch {
		case tt.err == "" && msg != "":
			t.Errorf("parseCondition(%q, %v): %s", tt.text, tt.kind, msg)
		case tt.err != "" && !strings.Contains(msg, tt.err):
			t.Errorf("parseCondition(%q, %v) message %q, want one containing %q", tt.text, tt.kind, msg, tt.err)
		case tt.err == "" && (got.Op != tt.op || got.Value != tt.val || got.Unit != tt.unit || got.Text != tt.text):
			t.Errorf("parseCondition(%q) = %+v, want %s %v %s", tt.text, got, tt.op, tt.val, tt.unit)
		}
	}
}

// fakeDBMetrics are the database metrics of a kind made up for these
// tests: the real kinds' tables are theirs (db/<kind>), and kinds/
// checks them.
var fakeDBMetrics = []MetricSpec{
	{Name: "deadlocks", Kind: Count, Doc: "deadlocks"},
	{
		Name: "hit_rate_min", Kind: Ratio, Doc: "the lowest hit rate of one cache",
		Params: []string{"Alpha", "Beta"}, ParamAliases: map[string]string{"first": "Alpha"},
	},
}

// fakeKinds gives the fake kind's metrics to targets of kind "fake" and
// none to those of kind "bare".
func fakeKinds(kinds map[string]string) func(target string) (string, []MetricSpec) {
	return func(target string) (string, []MetricSpec) {
		if kinds[target] == "fake" {
			return "fake", fakeDBMetrics
		}
		return kinds[target], nil
	}
}

func TestLookupMetric(t *testing.T) {
	t.Parallel()
	workloads := []Workload{{Name: "oltp", Pool: 4}, {Name: "reports"}}
	one := metricScope{workloads: workloads, db: fakeKinds(map[string]string{"": "fake"})}
	several := metricScope{workloads: workloads, targets: []string{"db", "shard2", "cache"},
		db: fakeKinds(map[string]string{"db": "fake", "shard2": "fake", "cache": "bare"})}
	bare := metricScope{workloads: workloads, db: fakeKinds(map[string]string{"": "bare"})}
	tests := []struct {
		scope     metricScope
		metric    string
		canonical string
		kind      MetricKind
		err       string
	}{
		{one, "oltp.p99", "oltp.p99", Latency, ""},
		{one, "reports.error_rate", "reports.error_rate", Ratio, ""},
		{one, "oltp.pool_wait_p99", "oltp.pool_wait_p99", Latency, ""},
		{one, "reports.pool_wait_p99", "", 0, "has no pool"}, // no pool, no pool wait
		{one, "db.deadlocks", "db.deadlocks", Count, ""},
		{one, "db.hit_rate_min.Alpha", "db.hit_rate_min.Alpha", Ratio, ""},
		{one, "db.hit_rate_min.alpha", "db.hit_rate_min.Alpha", Ratio, ""}, // any case
		{one, "db.hit_rate_min.first", "db.hit_rate_min.Alpha", Ratio, ""}, // an alias
		{one, "finding.deadlock", "finding.deadlock", Presence, ""},
		{one, "finding.multixact.slru", "finding.multixact.slru", Presence, ""},
		{one, "oltp.p98", "", 0, `did you mean "oltp.p90"`},
		{one, "olpt.p99", "", 0, `did you mean "oltp"`},
		{one, "oltp.p99.x", "", 0, "takes no parameter"},
		{one, "db.hit_rate_min", "", 0, "needs a parameter"},
		{one, "db.hit_rate_min.Alpa", "", 0, `did you mean "db.hit_rate_min.Alpha"`},
		{one, "db.tps", "", 0, "unknown metric"},
		{one, "finding.", "", 0, "bad metric"},
		{one, "finding.Deadlock", "", 0, "bad rule id"},
		{one, "p99", "", 0, "bad metric"},
		{one, ".p99", "", 0, "bad metric"},
		// A kind that registered no database metrics has none to judge.
		{bare, "db.deadlocks", "", 0, "the target (bare) has no database metrics"},
		// Several targets: a database metric names its target, and is
		// looked up in that target's kind's table.
		{several, "db.db.deadlocks", "db.db.deadlocks", Count, ""},
		{several, "shard2.db.hit_rate_min.beta", "shard2.db.hit_rate_min.Beta", Ratio, ""},
		{several, "shard2.db.hit_rate_min.Gamma", "", 0, `unknown parameter "Gamma"`},
		{several, "db.db.tps", "", 0, `unknown metric "db.db.tps"`},
		{several, "cache.db.deadlocks", "", 0, `target "cache" (bare) has no database metrics`},
		{several, "shard3.db.deadlocks", "", 0, `names no target "shard3"; did you mean "shard2"?`},
		{several, "db.deadlocks", "", 0, "names the target"},
		{several, "oltp.p99", "oltp.p99", Latency, ""},
		{several, "finding.deadlock", "finding.deadlock", Presence, ""},
		{several, "oltp.db", "", 0, "unknown metric"}, // a workload is not a target
	}
	for _, tt := range tests {
		canonical, spec, msg, _ := lookupMetric(tt.metric, tt.scope)
		switch {
		case tt.err == "" && msg != "":
			t.Errorf("lookupMetric(%q): %s", tt.metric, msg)
		case tt.err != "" && !strings.Contains(msg, tt.err):
			t.Errorf("lookupMetric(%q) message %q, want one containing %q", tt.metric, msg, tt.err)
		case tt.err == "" && (canonical != tt.canonical || spec.Kind != tt.kind):
			t.Errorf("lookupMetric(%q) = %q, %v; want %q, %v", tt.metric, canonical, spec.Kind, tt.canonical, tt.kind)
		}
	}
}

// TestThresholdValues converts units and compares measurements in the
// metric's base unit.
func TestThresholdValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		th       Threshold
		base     float64
		measured float64
		holds    bool
	}{
		{Threshold{Op: "<", Value: 50, Unit: "ms", Kind: Latency}, 0.05, 0.049, true},
		{Threshold{Op: "<", Value: 50, Unit: "ms", Kind: Latency}, 0.05, 0.05, false},
		{Threshold{Op: "<=", Value: 2, Unit: "s", Kind: Latency}, 2, 2, true},
		{Threshold{Op: ">", Value: 250, Unit: "us", Kind: Latency}, 250e-6, 1e-3, true},
		{Threshold{Op: "<", Value: 0.1, Unit: "%", Kind: Ratio}, 0.001, 0.002, false},
		{Threshold{Op: ">=", Value: 90, Unit: "%", Kind: Ratio}, 0.9, 0.95, true},
		{Threshold{Op: "==", Value: 0, Kind: Count}, 0, 0, true},
		{Threshold{Op: "!=", Value: 0, Kind: Count}, 0, 0, false},
		{Threshold{Op: ">=", Value: 1000, Kind: Throughput}, 1000, 999.5, false},
		{Threshold{Op: OpAbsent, Kind: Presence}, 0, 0, true},
		{Threshold{Op: OpAbsent, Kind: Presence}, 0, 2, false},
		{Threshold{Op: OpPresent, Kind: Presence}, 0, 1, true},
	}
	for _, tt := range tests {
		if got := tt.th.BaseValue(); got != tt.base {
			t.Errorf("%+v: BaseValue = %v, want %v", tt.th, got, tt.base)
		}
		if got := tt.th.Holds(tt.measured); got != tt.holds {
			t.Errorf("%+v: Holds(%v) = %v, want %v", tt.th, tt.measured, got, tt.holds)
		}
	}
	scope, name, param := Threshold{Metric: "db.hit_rate_min.Alpha"}.Split()
	if scope != "db" || name != "hit_rate_min" || param != "Alpha" {
		t.Errorf("Split = %q %q %q", scope, name, param)
	}
	scope, name, param = Threshold{Metric: "finding.multixact.slru"}.Split()
	if scope != "finding" || name != "multixact.slru" || param != "" {
		t.Errorf("Split finding = %q %q %q", scope, name, param)
	}
}

// TestMetricTables checks the workload metrics' table (each kind's
// database metrics are checked in kinds/, with CheckMetricSpecs).
func TestMetricTables(t *testing.T) {
	t.Parallel()
	for _, err := range CheckMetricSpecs(WorkloadMetrics) {
		t.Error(err)
	}
	for _, m := range WorkloadMetrics {
		if m.Measure != nil || m.Params != nil {
			t.Errorf("workload metric %s has a measure or parameters: the report reads workloads itself", m.Name)
		}
	}
	if errs := CheckMetricSpecs(append(slices.Clone(fakeDBMetrics), MetricSpec{Name: "deadlocks", Kind: Presence})); len(errs) != 1 {
		t.Errorf("a duplicate presence metric without doc: %v, want its error", errs)
	}
}
