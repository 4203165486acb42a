package mariadb

import (
	mm "github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

var _ present.Presenter = Backend{}

// Presentation is how the report shows a MariaDB run: the workloads'
// throughput and latency, then the server's charts (charts.go); the
// compare page's load is the process list's active sessions, and compare
// weighs InnoDB's locks and the query cache's lock, which a slow plan
// does not explain.
func (Backend) Presentation() present.Kind {
	return present.Kind{
		Product: "MariaDB", // runs recorded before the backend filled Product in were embedded MariaDB's
		Charts:  append([]present.Chart{{Drawn: present.DrawnThroughput}, {Drawn: present.DrawnLatency}}, mariadbCharts()...),
		Load:    mariadbLoad(),
		// The embedded server's processes (sampler/host's "server").
		ServerCPU: &present.ServerCPU{Source: hostmetric.Server, Key: hostmetric.ServerCPU},
		// Where the embedded server lives: its port and socket, and the
		// paths under its throwaway directory.
		InstanceSettings: []string{"port", "report_port", "socket", "datadir", "pid_file", "log_error",
			"tmpdir", "slave_load_tmpdir", "aria_log_dir_path", "wsrep_data_home_dir"},
		Compare: &present.Compare{
			StallMS: 1000, // a second: a lock wait or a queue on a global lock, not a slow plan
			Counters: []present.Counter{
				{Source: mm.GlobalStatus, Key: mm.Deadlocks, Label: "deadlocks (Innodb_deadlocks)", Unit: "", Agg: present.Sum},
				{Source: mm.GlobalStatus, Key: mm.RowLockTimeMS, Label: "time waiting for row locks", Unit: "ms", Agg: present.Sum},
				{Source: mm.InnoDBLocks, Key: mm.LocksBlocked, Label: "most transactions waiting for a lock at once", Unit: "", Agg: present.Max},
				{Source: mm.InnoDBLocks, Key: mm.LockWaits(mm.LockAutoInc), Label: "most waiting for a table's AUTO-INC lock at once", Unit: "", Agg: present.Max},
				{Source: mm.Processlist, Key: mm.State(mm.StateQueryCacheLock), Label: "most sessions waiting for the query cache lock at once", Unit: "", Agg: present.Max},
				{Source: mm.GlobalStatus, Key: mm.QcacheInvalidPerS, Label: "query-cache invalidations per second", Unit: "/s", Agg: present.Mean},
				{Source: mm.GlobalStatus, Key: mm.ThreadsRunning, Label: "most threads running at once", Unit: "", Agg: present.Max},
				{Source: mm.GlobalStatus, Key: mm.ConnErrorsMaxConn, Label: "connections refused (max_connections)", Unit: "", Agg: present.Sum},
				{Source: mm.GlobalStatus, Key: mm.QuestionsPerS, Label: "statements per second", Unit: "/s", Agg: present.Mean},
			},
		},
	}
}
