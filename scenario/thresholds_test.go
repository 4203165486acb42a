package scenario

import (
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

func TestLookupMetric(t *testing.T) {
	t.Parallel()
	workloads := []Workload{{Name: "oltp", Pool: 4}, {Name: "reports"}}
	tests := []struct {
		metric    string
		canonical string
		kind      MetricKind
		err       string
	}{
		{"oltp.p99", "oltp.p99", Latency, ""},
		{"reports.error_rate", "reports.error_rate", Ratio, ""},
		{"oltp.pool_wait_p99", "oltp.pool_wait_p99", Latency, ""},
		{"reports.pool_wait_p99", "", 0, "has no pool"}, // no pool, no pool wait
		{"db.deadlocks", "db.deadlocks", Count, ""},
		{"db.slru_hit_rate_min.MultiXactMember", "db.slru_hit_rate_min.MultiXactMember", Ratio, ""},
		{"db.slru_hit_rate_min.multixactmember", "db.slru_hit_rate_min.MultiXactMember", Ratio, ""}, // any case
		{"db.slru_hit_rate_min.subtransaction", "db.slru_hit_rate_min.Subtrans", Ratio, ""},         // PostgreSQL 17's name
		{"finding.deadlock", "finding.deadlock", Presence, ""},
		{"finding.multixact.slru", "finding.multixact.slru", Presence, ""},
		{"oltp.p98", "", 0, `did you mean "oltp.p90"`},
		{"olpt.p99", "", 0, `did you mean "oltp"`},
		{"oltp.p99.x", "", 0, "takes no parameter"},
		{"db.slru_hit_rate_min", "", 0, "needs a parameter"},
		{"db.slru_hit_rate_min.Xac", "", 0, `did you mean "db.slru_hit_rate_min.Xact"`},
		{"db.tps", "", 0, "unknown metric"},
		{"finding.", "", 0, "bad metric"},
		{"finding.Deadlock", "", 0, "bad rule id"},
		{"p99", "", 0, "bad metric"},
		{".p99", "", 0, "bad metric"},
	}
	for _, tt := range tests {
		canonical, spec, msg, _ := lookupMetric(tt.metric, workloads)
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
	scope, name, param := Threshold{Metric: "db.slru_hit_rate_min.Xact"}.Split()
	if scope != "db" || name != "slru_hit_rate_min" || param != "Xact" {
		t.Errorf("Split = %q %q %q", scope, name, param)
	}
	scope, name, param = Threshold{Metric: "finding.multixact.slru"}.Split()
	if scope != "finding" || name != "multixact.slru" || param != "" {
		t.Errorf("Split finding = %q %q %q", scope, name, param)
	}
}

// TestMetricTables checks the tables others extend: unique names, a kind
// and a doc line each, parameters only with their values.
func TestMetricTables(t *testing.T) {
	t.Parallel()
	for _, table := range [][]MetricSpec{WorkloadMetrics, DBMetrics} {
		seen := make(map[string]bool)
		for _, m := range table {
			if seen[m.Name] || !validName(m.Name, "_") || m.Kind == 0 || m.Kind == Presence || m.Doc == "" {
				t.Errorf("bad metric spec %+v", m)
			}
			seen[m.Name] = true
			for alias, p := range m.ParamAliases {
				if alias != strings.ToLower(alias) || !contains(m.Params, p) {
					t.Errorf("metric %s: alias %q names %q, not a parameter", m.Name, alias, p)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
