package mariadb

import (
	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/internal/promexport"
)

var _ promexport.Named = Backend{}

// MetricNames are MariaDB's key tables, for the names and units of its
// sampled series on /metrics.
func (Backend) MetricNames() promexport.Names {
	var n promexport.Names
	for _, k := range mariadbmetric.Keys {
		n.Keys = append(n.Keys, promexport.Key(k))
	}
	return n
}
