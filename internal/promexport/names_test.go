package promexport

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

// How sampled keys become metric names: placeholders become labels,
// units go into the name in Prometheus's base units.
func TestSeriesNames(t *testing.T) {
	t.Parallel()
	n := newNamer(testNames())
	for _, c := range []struct {
		source, key string
		name        string
		labels      map[string]string
		scale       float64
	}{
		// Two placeholders, one label each; the count noun says what the prefix counts.
		{"pg_stat_activity", "wait.Lock:transactionid", "firedrill_pg_stat_activity_wait_sessions", map[string]string{"type": "Lock", "event": "transactionid"}, 1},
		// The exact key wins over the pattern it would also match.
		{"pg_stat_activity", "wait.CPU", "firedrill_pg_stat_activity_wait_cpu", nil, 1},
		// A state with spaces is a label value as it is.
		{"pg_stat_activity", "state.idle in transaction", "firedrill_pg_stat_activity_state_sessions", map[string]string{"state": "idle in transaction"}, 1},
		// Seconds: _s becomes _seconds.
		{"pg_stat_activity", "oldest_xact_age_s", "firedrill_pg_stat_activity_oldest_xact_age_seconds", nil, 1},
		// A table keeps its schema's dot; <T> is labelled table.
		{"pg_stat_user_tables", "firedrill.pgbench_accounts.n_dead_tup", "firedrill_pg_stat_user_tables_n_dead_tup", map[string]string{"table": "firedrill.pgbench_accounts"}, 1},
		// A 0..1 rate is a ratio; <N> is labelled cache.
		{"pg_stat_slru", "MultiXactMember.hit_rate", "firedrill_pg_stat_slru_hit_ratio", map[string]string{"cache": "MultiXactMember"}, 1},
		// ms become seconds, the value scaled.
		{"wal", "wal_sync_time_ms", "firedrill_wal_sync_time_seconds", nil, 1e-3},
		// _per_s becomes _per_second; the source's name is not said twice.
		{"wal", "wal_bytes_per_s", "firedrill_wal_bytes_per_second", nil, 1},
		// ms/s: seconds per second.
		{"pg_stat_statements", "exec_ms_per_s", "firedrill_pg_stat_statements_exec_seconds_per_second", nil, 1e-3},
		// A byte rate whose name does not say bytes gets them.
		{"mariadb_global_status", "innodb_os_log_written_per_s", "firedrill_mariadb_global_status_innodb_os_log_written_bytes_per_second", nil, 1},
		// A Com_ counter's command is a label.
		{"mariadb_global_status", "com.commit_per_s", "firedrill_mariadb_global_status_com_per_second", map[string]string{"command": "commit"}, 1},
		// A count since the server started is a counter, named as one.
		{"pg_stat_database", "deadlocks_total", "firedrill_pg_stat_database_deadlocks_total", nil, 1},
		// µs become seconds; KB/s bytes per second.
		{"redis_info", "latest_fork_usec", "firedrill_redis_info_latest_fork_seconds", nil, 1e-6},
		{"redis_info", "instantaneous_input_kbps", "firedrill_redis_info_instantaneous_input_bytes_per_second", nil, 1024},
		{"redis_commandstats", "set.usec_per_call", "firedrill_redis_commandstats_seconds_per_call", map[string]string{"cmd": "set"}, 1e-6},
		{"redis_latency", "aof-write-pending-fsync.max_ms", "firedrill_redis_latency_max_seconds", map[string]string{"event": "aof-write-pending-fsync"}, 1e-3},
		// The total beside a pattern's per-command series needs its own name.
		{"redis_commandstats", "calls_per_s", "firedrill_redis_commandstats_all_calls_per_second", nil, 1},
		// Percent of CPU is a ratio.
		{"host", "cpu.iowait", "firedrill_host_cpu_iowait_ratio", nil, 0.01},
		// firedrill's own process is "self", not firedrill_firedrill.
		{"firedrill", "cpu", "firedrill_self_cpu_cores", nil, 1},
		// A service's series: its name, instance and target are labels.
		{"service", "api.queue_oldest_age", "firedrill_service_queue_oldest_age_seconds", map[string]string{"service": "api"}, 1},
		{"service", "api.goodput", "firedrill_service_goodput_per_second", map[string]string{"service": "api"}, 1},
		{"service", "api.instance.3.busy_threads", "firedrill_service_instance_busy_threads", map[string]string{"service": "api", "server": "3"}, 1},
		{"service", "api.breaker_state.shard-1", "firedrill_service_breaker_state", map[string]string{"service": "api", "target": "shard-1"}, 1},
		// A key no table lists is still served, sanitised.
		{"pg_stat_activity", "Some New.Key", "firedrill_pg_stat_activity_some_new_key", nil, 1},
		{"a_new_source", "x", "firedrill_a_new_source_x", nil, 1},
	} {
		s := n.series(c.source, c.key)
		labels := map[string]string{}
		for i, l := range s.LabelNames {
			labels[l] = s.LabelValues[i]
		}
		if c.labels == nil {
			c.labels = map[string]string{}
		}
		if s.Name != c.name || s.Scale != c.scale || !equalMaps(labels, c.labels) {
			t.Errorf("%s %q: %s%v ×%g, want %s%v ×%g", c.source, c.key, s.Name, labels, s.Scale, c.name, c.labels, c.scale)
		}
	}
	if s := n.series("pg_stat_database", "deadlocks_total"); !s.Counter {
		t.Errorf("deadlocks_total is not a counter")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Every key of every metric leaf gives a valid Prometheus name and
// labels, and one name has one set of labels and one help: otherwise
// the registry would refuse the series at scrape time.
func TestEveryKeyHasOneConsistentName(t *testing.T) {
	t.Parallel()
	type shape struct{ labels, help, key string }
	byName := map[string]shape{}
	client := []string{"transactions_total", "errors_total", "latency_seconds", "clients", "run_info", "sampler_up", "event_active"}
	for _, k := range keyTables() {
		key := k.Key
		for strings.Contains(key, "<") { // an instance of the pattern
			open := strings.IndexByte(key, '<')
			closeAt := strings.IndexByte(key[open:], '>')
			key = key[:open] + "x" + key[open+closeAt+1:]
		}
		s := newNamer(testNames()).seriesFor(newNamer(testNames()).bySource[k.Source], k.Source, key)
		if !model.LegacyValidation.IsValidMetricName(s.Name) {
			t.Errorf("%s %s: %q is not a valid metric name", k.Source, k.Key, s.Name)
		}
		for _, l := range s.LabelNames {
			if !model.LegacyValidation.IsValidLabelName(l) || slices.Contains([]string{"scenario", "run_id", "backend", "shard", "le", "quantile", "job", "instance"}, l) {
				t.Errorf("%s %s: label %q is invalid or taken", k.Source, k.Key, l)
			}
		}
		got := shape{strings.Join(s.LabelNames, ","), s.Help, k.Source + " " + k.Key}
		if prev, ok := byName[s.Name]; ok && (prev.labels != got.labels || prev.help != got.help) {
			t.Errorf("%s: from %q and %q, with labels [%s] and [%s]", s.Name, prev.key, got.key, prev.labels, got.labels)
		}
		byName[s.Name] = got
		for _, c := range client {
			if s.Name == Namespace+"_"+c {
				t.Errorf("%s %s: %s is a client metric's name", k.Source, k.Key, s.Name)
			}
		}
	}
}

// Names are sanitised to Prometheus's legacy character set.
func TestSanitize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"pg_stat_activity":   "pg_stat_activity",
		"Lock:transactionid": "lock_transactionid",
		"  a..b  ":           "a_b",
		"9lives":             "x_9lives",
		"":                   "x_",
		"héllo wörld":        "h_llo_w_rld",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
