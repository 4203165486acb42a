package mariadb

import (
	mm "github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/report/present"
)

// mariadbCharts are a MariaDB (or MySQL) run's database charts: what the
// sessions were doing (the process list by state), InnoDB's lock waits and
// deadlocks, the query cache, and connections against max_connections.
func mariadbCharts() []present.Chart {
	return []present.Chart{
		{
			ID: "mariadb-states", Title: "Sessions by state (process list)",
			Help: "Active sessions per tick, stacked by their process-list state (\"Waiting for query cache lock\", \"Update\", \"Sending data\" …; the samplers' own left out); the largest states on their own, the rest as other. Threads running (SHOW GLOBAL STATUS, the samplers' included) dashed.",
			Axes: []present.Axis{{Label: "sessions", Unit: "aas", Min: present.Zero()}},
			What: "session states",
			Series: []present.Series{
				{Source: mm.Processlist, Prefix: mm.StatePrefix, Top: 8, Stack: true, ZeroWhenAbsent: true},
				{Source: mm.GlobalStatus, Key: mm.ThreadsRunning, Label: "threads running", Color: "#444444", Style: "dash", Width: 1},
			},
		},
		{
			ID: "mariadb-locks", Title: "InnoDB lock waits",
			Help: "Transactions waiting for an InnoDB lock per tick, stacked by the kind of lock (auto_inc: the table's AUTO-INC lock; record, next_key, gap, insert_intention: row locks); the longest current wait (right, dashed) and the time all sessions spent waiting for row locks in the tick (right, thin).",
			Axes: []present.Axis{{Label: "waiting", Unit: "count", Text: "transactions", Min: present.Zero()}, {Label: "lock wait", Unit: "s", Min: present.Zero()}},
			What: "lock waits",
			Series: []present.Series{
				{Source: mm.InnoDBLocks, Prefix: mm.LockWaitsPrefix, Top: 6, Stack: true, ZeroWhenAbsent: true},
				{Source: mm.InnoDBLocks, Key: mm.LocksMaxWaitS, Label: "longest wait", Axis: 1, Color: "#d62728", Style: "dash", Width: 1},
				{Source: mm.GlobalStatus, Key: mm.RowLockTimeMS, Label: "row-lock wait time in the tick", Axis: 1, Color: "#9467bd", Width: 1, Scale: 0.001},
			},
		},
		{
			ID: "mariadb-rowlocks", Title: "Row-lock time and deadlocks",
			Help: "Row-lock waits begun per second (left); deadlocks InnoDB detected in each tick (right, red). The time waited is on the lock-wait chart.",
			Axes: []present.Axis{{Label: "row-lock waits", Unit: "rate", Text: "waits/s", Min: present.Zero()}, {Label: "deadlocks", Unit: "count", Text: "per tick", Min: present.Zero(), Headroom: 2}},
			What: "row-lock counters",
			Series: []present.Series{
				{Source: mm.GlobalStatus, Key: mm.RowLockWaitsPerS, Label: "row-lock waits/s", Color: "#1f77b4", Width: 1},
				{Source: mm.GlobalStatus, Key: mm.Deadlocks, Label: "deadlocks", Axis: 1, Color: "#d62728", Width: 1.5},
			},
		},
		{
			ID: "mariadb-qcache", Title: "Query cache",
			Help: "Queries answered from the query cache, results stored in it and results dropped because a table they read changed, per second; every invalidation takes the cache's global lock. Flat at 0 when the cache is off.",
			Axes: []present.Axis{{Label: "query cache", Unit: "rate", Text: "per second", Min: present.Zero()}},
			What: "query-cache counters",
			Series: []present.Series{
				{Source: mm.GlobalStatus, Key: mm.QcacheHitsPerS, Label: "hits/s", Color: "#2ca02c", Width: 1.5},
				{Source: mm.GlobalStatus, Key: mm.QcacheInsertsPerS, Label: "inserts/s", Color: "#1f77b4", Width: 1},
				{Source: mm.GlobalStatus, Key: mm.QcacheInvalidPerS, Label: "invalidations/s", Color: "#d62728", Width: 1},
				{Source: mm.GlobalStatus, Key: mm.QcacheLowmemPerS, Label: "low-memory prunes/s", Color: "#8c564b", Width: 1, SkipIfZero: true},
			},
		},
		{
			ID: "mariadb-connections", Title: "Connections",
			Help: "Open connections (every session, the samplers' included) against max_connections (dashed); connections refused for max_connections in the interval (right, red).",
			Axes: []present.Axis{{Label: "connections", Unit: "count", Text: "connections", Min: present.Zero()}, {Label: "refused", Unit: "count", Text: "per tick", Min: present.Zero(), Headroom: 2}},
			What: "connection counts",
			Series: []present.Series{
				{Source: mm.GlobalStatus, Key: mm.ThreadsConnected, Label: "connected", Color: "#1f77b4", Width: 1.5},
				{Source: mm.GlobalStatus, Key: mm.MaxConnections, Label: "max_connections", Color: "#d62728", Style: "dash", Width: 1, Ref: true},
				{Source: mm.GlobalStatus, Key: mm.ConnErrorsMaxConn, Label: "refused", Axis: 1, Color: "#d62728", Width: 1, SkipIfZero: true},
			},
		},
	}
}

// mariadbLoad is what the compare page overlays of two MariaDB runs.
func mariadbLoad() *present.Load {
	return &present.Load{
		Title:  "Database load (active sessions)",
		Help:   "Sessions running a command per tick (the process list, the samplers' own left out); each run from its own start.",
		Axis:   present.Axis{Label: "sessions", Unit: "aas", Min: present.Zero()},
		Source: mm.Processlist, Key: mm.Active,
	}
}
