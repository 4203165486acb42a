package promexport

import (
	"testing"
	"unicode/utf8"

	"github.com/prometheus/common/model"
)

// Sampled keys carry what servers send (wait event names, table names,
// Redis commands and latency events): whatever they hold, the series
// has a valid name, valid label names and UTF-8 label values, one per
// label.
func FuzzSeriesName(f *testing.F) {
	for _, seed := range [][2]string{
		{"pg_stat_activity", "wait.Lock:transactionid"},
		{"pg_stat_activity", "state.idle in transaction"},
		{"pg_stat_user_tables", "public.\"we.ird\".n_dead_tup"},
		{"pg_stat_slru", ".hit_rate"},
		{"redis_commandstats", "client|list.calls_per_s"},
		{"redis_latency", "\xff\xfe.max_ms"},
		{"mariadb_processlist", "state."},
		{"host", "cpu.user"},
		{"", ""},
		{"über source", "ключ"},
	} {
		f.Add(seed[0], seed[1])
	}
	n := newNamer(testNames())
	f.Fuzz(func(t *testing.T, source, key string) {
		s := n.series(source, key)
		if !model.LegacyValidation.IsValidMetricName(s.Name) {
			t.Fatalf("%q %q: name %q", source, key, s.Name)
		}
		if len(s.LabelNames) != len(s.LabelValues) {
			t.Fatalf("%q %q: labels %v values %v", source, key, s.LabelNames, s.LabelValues)
		}
		for i, l := range s.LabelNames {
			if !model.LegacyValidation.IsValidLabelName(l) || !utf8.ValidString(s.LabelValues[i]) {
				t.Fatalf("%q %q: label %q=%q", source, key, l, s.LabelValues[i])
			}
		}
		if s.Scale == 0 {
			t.Fatalf("%q %q: scale 0", source, key)
		}
	})
}
