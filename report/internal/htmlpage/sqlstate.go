package htmlpage

import "github.com/firedrill/firedrill/timeline"

// sqlstateNames names the SQLSTATEs a load test meets most, so the errors
// table reads "deadlock_detected" and not only "40P01". The full list is
// PostgreSQL's errcodes.txt; an unlisted code shows its class.
var sqlstateNames = map[string]string{
	timeline.PoolTimeoutCode: "no pooled connection in time",
	"08000":                  "connection_exception",
	"08001":                  "sqlclient_unable_to_establish_sqlconnection",
	"08003":                  "connection_does_not_exist",
	"08004":                  "sqlserver_rejected_establishment_of_sqlconnection",
	"08006":                  "connection_failure",
	"08P01":                  "protocol_violation",
	"22012":                  "division_by_zero",
	"23502":                  "not_null_violation",
	"23503":                  "foreign_key_violation",
	"23505":                  "unique_violation",
	"23514":                  "check_violation",
	"25P02":                  "in_failed_sql_transaction",
	"25P03":                  "idle_in_transaction_session_timeout",
	"25006":                  "read_only_sql_transaction",
	"40001":                  "serialization_failure",
	"40P01":                  "deadlock_detected",
	"42601":                  "syntax_error",
	"42703":                  "undefined_column",
	"42P01":                  "undefined_table",
	"53000":                  "insufficient_resources",
	"53100":                  "disk_full",
	"53200":                  "out_of_memory",
	"53300":                  "too_many_connections",
	"53400":                  "configuration_limit_exceeded",
	"54000":                  "program_limit_exceeded",
	"55P03":                  "lock_not_available",
	"55000":                  "object_not_in_prerequisite_state",
	"57014":                  "query_canceled",
	"57P01":                  "admin_shutdown",
	"57P02":                  "crash_shutdown",
	"57P03":                  "cannot_connect_now",
	"57P05":                  "idle_session_timeout",
	"58030":                  "io_error",
	"XX000":                  "internal_error",
	"XX001":                  "data_corrupted",
	"XX002":                  "index_corrupted",
}

// sqlstateClasses names the classes (the first two characters).
var sqlstateClasses = map[string]string{
	"08": "connection exception",
	"22": "data exception",
	"23": "integrity constraint violation",
	"25": "invalid transaction state",
	"40": "transaction rollback",
	"42": "syntax error or access rule violation",
	"53": "insufficient resources",
	"54": "program limit exceeded",
	"55": "object not in prerequisite state",
	"57": "operator intervention",
	"58": "system error",
	"XX": "internal error",
}

// sqlstateName names a SQLSTATE or its class; "" if neither is known.
func sqlstateName(code string) string {
	if n, ok := sqlstateNames[code]; ok {
		return n
	}
	if len(code) == 5 {
		return sqlstateClasses[code[:2]]
	}
	return ""
}
