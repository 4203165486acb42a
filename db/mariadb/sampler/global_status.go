package mariadb

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/sampler"
)

// globalStatus turns SHOW GLOBAL STATUS's counters into rates: InnoDB row
// lock waits and deadlocks, the query cache, statements by command
// (Com_*), connections, the redo log and its fsyncs, and the storage
// engine's row operations (Handler_*). The samplers' own statements are
// in the counters (a few per second).
//
// Source "mariadb_global_status". Values:
//
//	innodb_row_lock_waits_per_s                1/s       row lock waits begun (Innodb_row_lock_waits)
//	innodb_row_lock_time_ms                    ms        time spent waiting for row locks, in the interval (Innodb_row_lock_time)
//	innodb_row_lock_current_waits              sessions  row lock waits now (Innodb_row_lock_current_waits)
//	innodb_deadlocks                           count     deadlocks detected in the interval (Innodb_deadlocks)
//	innodb_deadlocks_total                     count     deadlocks since the server started
//	qcache_hits_per_s                          1/s       queries answered from the query cache
//	qcache_inserts_per_s                       1/s       results stored in the query cache
//	qcache_not_cached_per_s                    1/s       queries the query cache could not keep
//	qcache_lowmem_prunes_per_s                 1/s       results dropped to make room
//	qcache_invalidations_per_s                 1/s       results dropped because a table they read changed: inserts minus growth minus prunes
//	qcache_queries_in_cache                    count     results in the query cache now
//	threads_running                            sessions  threads executing a statement now (the samplers' included)
//	threads_connected                          sessions  open connections now, every session included: each takes a max_connections slot
//	max_used_connections                       sessions  most connections open at once since the server started
//	max_connections                            sessions  the setting
//	connection_errors_max_connections          count     connections refused for max_connections in the interval
//	aborted_connects                           count     failed connection attempts in the interval
//	innodb_log_waits                           count     times a transaction waited for room in the log buffer, in the interval
//	innodb_log_writes_per_s                    1/s       writes to the redo log
//	innodb_os_log_fsyncs_per_s                 1/s       fsyncs of the redo log (absent on MariaDB 10.11: innodb_data_fsyncs_per_s counts them)
//	innodb_os_log_written_per_s                bytes/s   written to the redo log
//	innodb_data_fsyncs_per_s                   1/s       fsyncs of InnoDB's files (redo log included)
//	innodb_log_write_requests_per_s            1/s       log records written to the log buffer (Innodb_log_write_requests)
//	innodb_data_pending_fsyncs                 count     InnoDB fsyncs in flight now (Innodb_data_pending_fsyncs; MariaDB 10.11 leaves the redo log's out: 0 throughout a run whose every fsync was slowed)
//	binlog_commits_per_s                       1/s       transactions written to the binary log (Binlog_commits; 0 with log_bin off)
//	binlog_group_commits_per_s                 1/s       binary log group commits, each one write and, with sync_binlog = 1, one sync (Binlog_group_commits)
//	binlog_group_commit_trigger_count_per_s    1/s       group commits that left because binlog_commit_wait_count transactions had joined
//	binlog_group_commit_trigger_timeout_per_s  1/s       group commits that left because binlog_commit_wait_usec ran out
//	innodb_buffer_pool_reads_per_s             1/s       pages read from disk: not in the buffer pool
//	questions_per_s                            1/s       statements sent by clients
//	com.<command>_per_s                        1/s       statements per Com_<command> counter, e.g. "com.insert_select_per_s" (select, insert, insert_select, update, delete, commit, rollback always; the others when they moved)
//	handler.<name>_per_s                       1/s       storage engine row operations per Handler_<name> counter, e.g. "handler.read_rnd_next_per_s", "handler.write_per_s"
type globalStatus struct {
	session  *session
	counters sampler.Counters
	// Qcache_queries_in_cache at the previous reading.
	inCache     float64
	haveInCache bool
}

var _ sampler.Sampler = (*globalStatus)(nil)

const globalStatusName = mariadbmetric.GlobalStatus

// globalStatusSQL reads the counters and max_connections in one round
// trip.
var globalStatusSQL = Marker + `
SELECT lower(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
WHERE VARIABLE_NAME LIKE 'COM\_%' OR VARIABLE_NAME LIKE 'HANDLER\_%' OR VARIABLE_NAME LIKE 'QCACHE\_%'
	OR VARIABLE_NAME IN ('INNODB_ROW_LOCK_WAITS', 'INNODB_ROW_LOCK_TIME', 'INNODB_ROW_LOCK_CURRENT_WAITS', 'INNODB_DEADLOCKS',
		'THREADS_RUNNING', 'THREADS_CONNECTED', 'MAX_USED_CONNECTIONS', 'CONNECTION_ERRORS_MAX_CONNECTIONS', 'ABORTED_CONNECTS',
		'INNODB_LOG_WAITS', 'INNODB_LOG_WRITES', 'INNODB_OS_LOG_FSYNCS', 'INNODB_OS_LOG_WRITTEN', 'INNODB_DATA_FSYNCS',
		'INNODB_BUFFER_POOL_READS', 'QUESTIONS', 'INNODB_LOG_WRITE_REQUESTS', 'INNODB_DATA_PENDING_FSYNCS',
		'BINLOG_COMMITS', 'BINLOG_GROUP_COMMITS', 'BINLOG_GROUP_COMMIT_TRIGGER_COUNT', 'BINLOG_GROUP_COMMIT_TRIGGER_TIMEOUT')
UNION ALL SELECT 'max_connections', @@max_connections`

// alwaysCom are the Com_ counters reported even when they did not move.
var alwaysCom = []string{"select", "insert", "insert_select", "update", "delete", "commit", "rollback"}

// statusSeries maps the status variables to keys: rates, deltas or
// gauges.
var statusSeries = []struct {
	variable, key string
	kind          seriesKind
}{
	{"innodb_row_lock_waits", mariadbmetric.RowLockWaitsPerS, perSecond},
	{"innodb_row_lock_time", mariadbmetric.RowLockTimeMS, perInterval},
	{"innodb_row_lock_current_waits", mariadbmetric.RowLockCurrentWaits, gauge},
	{"innodb_deadlocks", mariadbmetric.Deadlocks, perInterval},
	{"innodb_deadlocks", mariadbmetric.DeadlocksTotal, gauge},
	{"qcache_hits", mariadbmetric.QcacheHitsPerS, perSecond},
	{"qcache_inserts", mariadbmetric.QcacheInsertsPerS, perSecond},
	{"qcache_not_cached", mariadbmetric.QcacheNotCachedPerS, perSecond},
	{"qcache_lowmem_prunes", mariadbmetric.QcacheLowmemPerS, perSecond},
	{"qcache_queries_in_cache", mariadbmetric.QcacheQueries, gauge},
	{"threads_running", mariadbmetric.ThreadsRunning, gauge},
	{"threads_connected", mariadbmetric.ThreadsConnected, gauge},
	{"max_used_connections", mariadbmetric.MaxUsedConnections, gauge},
	{"max_connections", mariadbmetric.MaxConnections, gauge},
	{"connection_errors_max_connections", mariadbmetric.ConnErrorsMaxConn, perInterval},
	{"aborted_connects", mariadbmetric.AbortedConnects, perInterval},
	{"innodb_log_waits", mariadbmetric.LogWaits, perInterval},
	{"innodb_log_writes", mariadbmetric.LogWritesPerS, perSecond},
	{"innodb_os_log_fsyncs", mariadbmetric.OSLogFsyncsPerS, perSecond},
	{"innodb_os_log_written", mariadbmetric.OSLogWrittenPerS, perSecond},
	{"innodb_data_fsyncs", mariadbmetric.DataFsyncsPerS, perSecond},
	{"innodb_log_write_requests", mariadbmetric.LogWriteRequestsPerS, perSecond},
	{"innodb_data_pending_fsyncs", mariadbmetric.DataPendingFsyncs, gauge},
	{"binlog_commits", mariadbmetric.BinlogCommitsPerS, perSecond},
	{"binlog_group_commits", mariadbmetric.BinlogGroupsPerS, perSecond},
	{"binlog_group_commit_trigger_count", mariadbmetric.BinlogGroupByCountPerS, perSecond},
	{"binlog_group_commit_trigger_timeout", mariadbmetric.BinlogGroupByTimeoutPerS, perSecond},
	{"innodb_buffer_pool_reads", mariadbmetric.InnoDBBufferPoolRead, perSecond},
	{"questions", mariadbmetric.QuestionsPerS, perSecond},
}

// seriesKind says how a counter becomes a value.
type seriesKind uint8

const (
	gauge       seriesKind = iota // as read
	perSecond                     // its growth per second
	perInterval                   // its growth in the interval
)

func (*globalStatus) Name() string { return globalStatusName }

func (smp *globalStatus) Sample(ctx context.Context) (map[string]float64, any, error) {
	reading := map[string]float64{}
	err := smp.session.query(ctx, "read "+globalStatusName, globalStatusSQL, func(rows *sql.Rows) error {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			reading[name] = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	iv := smp.counters.Next(time.Now(), reading)
	values := map[string]float64{}
	for _, s := range statusSeries {
		switch s.kind {
		case gauge:
			if v, ok := reading[s.variable]; ok {
				values[s.key] = v
			}
		case perSecond:
			if v, ok := iv.Rate(s.variable); ok {
				values[s.key] = v
			}
		case perInterval:
			if v, ok := iv.Delta(s.variable); ok {
				values[s.key] = v
			}
		}
	}
	// Results dropped for a change of their tables: what went in, less
	// what stayed and what was pruned for room.
	inserts, ok1 := iv.Delta("qcache_inserts")
	prunes, ok2 := iv.Delta("qcache_lowmem_prunes")
	inCache, ok3 := reading["qcache_queries_in_cache"]
	if ok1 && ok2 && ok3 && smp.haveInCache {
		values[mariadbmetric.QcacheInvalidPerS] = max(0, inserts-(inCache-smp.inCache)-prunes) / iv.Seconds
	}
	smp.inCache, smp.haveInCache = inCache, ok3
	for name := range reading {
		var key string
		switch {
		case strings.HasPrefix(name, "com_"):
			command := strings.TrimPrefix(name, "com_")
			if d, ok := iv.Delta(name); !ok || (d == 0 && !contains(alwaysCom, command)) {
				continue
			}
			key = mariadbmetric.Com(command)
		case strings.HasPrefix(name, "handler_"):
			if d, ok := iv.Delta(name); !ok || d == 0 {
				continue
			}
			key = mariadbmetric.Handler(strings.TrimPrefix(name, "handler_"))
		default:
			continue
		}
		if v, ok := iv.Rate(name); ok {
			values[key] = v
		}
	}
	return values, nil, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
