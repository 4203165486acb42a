package mariadbrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"sort"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/timeline"
)

// connectionSaturation is connection-saturation on MariaDB/MySQL: an
// application pool that ran dry, and Threads_connected at
// max_connections (every session counts, firedrill's included), the
// connections the server refused for it, and the clients' 1040 errors.
type connectionSaturation struct{}

var _ diagnose.Rule = connectionSaturation{}

func (connectionSaturation) ID() string { return "connection-saturation" }

// Inputs names the sources the rule reads.
func (connectionSaturation) Inputs() diagnose.Inputs {
	return diagnose.Inputs{Also: []string{mariadbmetric.GlobalStatus}}
}

func (connectionSaturation) Check(run *timeline.Run) []diagnose.Finding {
	pools := diagnose.PoolFindings(run, diagnose.PoolServer{LimitSetting: "max_connections",
		References: []string{"https://mariadb.com/kb/en/server-system-variables/#max_connections"}})
	if f, ok := mariadbServerLimitFinding(run); ok {
		f, pools = diagnose.OneCause(run, f, pools)
		return append(pools, f)
	}
	return pools
}

// tooManyConnectionsNumber is ER_CON_COUNT_ERROR's number; the clients
// record it as "SQLSTATE/1040".
const tooManyConnectionsNumber = "/1040"

// mariadbServerLimitFinding reports connections at max_connections and
// refused connections on a MariaDB or MySQL server.
func mariadbServerLimitFinding(run *timeline.Run) (diagnose.Finding, bool) {
	conns := run.Series(mariadbmetric.GlobalStatus, mariadbmetric.ThreadsConnected)
	maxConn := diagnose.Over(run.Series(mariadbmetric.GlobalStatus, mariadbmetric.MaxConnections), 0, math.Inf(1))
	refused := diagnose.SumPoints(run.Series(mariadbmetric.GlobalStatus, mariadbmetric.ConnErrorsMaxConn), 0, math.Inf(1))
	var errs int64
	byWorkload := map[string]int64{}
	errFrom, errTo := math.Inf(1), math.Inf(-1)
	for _, iv := range run.Intervals {
		for code, n := range iv.Errors {
			if n > 0 && len(code) > len(tooManyConnectionsNumber) && code[len(code)-len(tooManyConnectionsNumber):] == tooManyConnectionsNumber {
				errs += n
				byWorkload[iv.Workload] += n
				errFrom, errTo = math.Min(errFrom, iv.Start), math.Max(errTo, iv.End)
			}
		}
	}
	var atLimit []timeline.Point
	if maxConn.N > 0 && maxConn.Last > 0 {
		for _, p := range conns {
			if p.V >= maxConn.Last {
				atLimit = append(atLimit, p)
			}
		}
	}
	if errs == 0 && refused == 0 && len(atLimit) < 2 {
		return diagnose.Finding{}, false
	}
	f := diagnose.Finding{Severity: diagnose.Warning, References: []string{
		"https://mariadb.com/kb/en/server-system-variables/#max_connections",
		"https://mariadb.com/kb/en/server-system-variables/#extra_max_connections",
		"https://dev.mysql.com/doc/refman/8.0/en/too-many-connections.html",
	}}
	if len(atLimit) > 0 {
		f.Start, f.End = math.Max(0, atLimit[0].T-diagnose.Tick(run)), atLimit[len(atLimit)-1].T
		peak := diagnose.Over(conns, 0, math.Inf(1))
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.ThreadsConnected), T: peak.MaxT, Value: peak.Max,
			Text: fmt.Sprintf("%s connections open (Threads_connected) at the limit of max_connections %s in %d samples; only an account with SUPER (or CONNECTION ADMIN) gets the one connection kept beyond it",
				diagnose.HumanNum(peak.Max), diagnose.HumanNum(maxConn.Last), len(atLimit))})
	}
	if refused > 0 || errs > 0 {
		f.Severity, f.Lasting = diagnose.Critical, true // refused connections stay refused
		if errs > 0 {
			f.Start, f.End = errFrom, errTo
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.ConnErrorsMaxConn), Value: refused,
			Text: fmt.Sprintf("%s connection attempts refused by the server for max_connections (Connection_errors_max_connections)", diagnose.HumanNum(refused))})
	}
	var names []string
	for w := range byWorkload {
		names = append(names, w)
	}
	sort.Strings(names)
	for _, w := range names {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + w + ".errors.1040", T: errTo, Value: float64(byWorkload[w]),
			Text: fmt.Sprintf("%s tries of %s failed with 1040 Too many connections", diagnose.HumanNum(float64(byWorkload[w])), w)})
	}
	if len(run.Manifest.Workloads) == 1 {
		f.Workload = run.Manifest.Workloads[0].Name
	}
	if f.Severity == diagnose.Critical {
		f.Headline = fmt.Sprintf("The server refused connections (1040 Too many connections): connections reached max_connections %s", diagnose.HumanNum(maxConn.Last))
	} else {
		f.Headline = fmt.Sprintf("Connections reached the server's limit (max_connections %s): the next client will be refused", diagnose.HumanNum(maxConn.Last))
	}
	f.Mechanism = "MariaDB serves each connection with a thread and its buffers and caps them at max_connections; past it a new connection fails at once with 1040 (one more is kept for an account with SUPER, so an administrator can still get in). " +
		"Clients that each open their own connection, or pools sized without regard to each other, reach the cap long before the server runs out of CPU; every monitoring or admin session takes a slot too."
	f.Remedy = "Keep the clients behind pools whose total size across all application instances stays below max_connections (with room for monitoring and administrators); raise max_connections (SET GLOBAL max_connections = …, dynamic) only with the memory for it, or use the thread pool (thread_handling = pool-of-threads) so that many connections share few threads."
	return f, true
}
