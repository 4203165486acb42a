package mariadb

import (
	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/drills/measure"
)

var _ measure.Measured = Backend{}

// DrillMetrics are what drills may expect of a MariaDB run beyond the
// clients' numbers: the deadlocks InnoDB detected (Innodb_deadlocks),
// else the clients' 1213 errors.
func (Backend) DrillMetrics() []measure.Metric {
	return []measure.Metric{{
		Name: "deadlocks", Trailing: true,
		Sum:        []measure.Series{{Source: mariadbmetric.GlobalStatus, Key: mariadbmetric.Deadlocks}},
		ErrorCodes: []string{"40001/1213"},
	}}
}
