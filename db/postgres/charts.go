package postgres

import (
	"fmt"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/report/present"
)

// The report's families: the waits and tables drawn on their own, the
// rest summed as other.
const (
	topWaits  = 8
	topTables = 5
)

// waitShades colour wait events by type, as Performance Insights does:
// CPU green, IO blue, locks red, lightweight locks pink.
func waitShades() map[string][]string {
	return map[string][]string{
		"CPU":       {"#2ca02c"},
		"IO":        {"#1f5fbf", "#4a86d9", "#7aa8e8", "#a9c8f2"},
		"Lock":      {"#c62828", "#e05050", "#ef8080", "#f5aaaa"},
		"LWLock":    {"#b0307a", "#d0559c", "#e283bb", "#efb0d6"},
		"IPC":       {"#e08a00", "#f0a830", "#f5c46a"},
		"Client":    {"#7b5aa6", "#a283c9"},
		"Timeout":   {"#8c6d31", "#b8955a"},
		"Activity":  {"#17becf", "#6fd7e2"},
		"BufferPin": {"#bcbd22"},
		"Extension": {"#637939"},
	}
}

// charts are a PostgreSQL run's database charts: throughput with the
// deadlocks the server detected, the sessions by wait event, latency,
// connections, the SLRU caches and the xmin horizon.
func charts() []present.Chart {
	return []present.Chart{
		{
			Drawn: present.DrawnThroughput,
			Series: []present.Series{
				// pg_stat_database, per tick, as a rate on the error axis,
				// where the failures they cause are: a deadlock is found
				// after deadlock_timeout, so its line leads the latency it
				// costs.
				{Source: pgmetric.Database, Key: pgmetric.Deadlocks, Label: "deadlocks/s (server)", Axis: 1, Color: "#7b0d0d", Width: 1.5},
			},
		},
		{
			Drawn: present.DrawnSessions,
			ID:    "aas", Title: "Database load (average active sessions)",
			Help: fmt.Sprintf("Sessions active in the database per tick, stacked by what they wait on (CPU = running, not waiting); the top %d waits by total, the rest as other.", topWaits),
			Axes: []present.Axis{{Label: "sessions", Unit: "aas", Min: present.Zero()}},
			What: "wait events",
			Series: []present.Series{
				{Source: pgmetric.Activity, Prefix: pgmetric.WaitPrefix, Top: topWaits},
				{Source: pgmetric.Activity, Key: pgmetric.WaitCPU, Label: "CPU"},
			},
			Shades: waitShades(),
		},
		{Drawn: present.DrawnLatency},
		{
			Drawn: present.DrawnConnections,
			ID:    "connections", Title: "Connections and pool wait",
			Help: "Server backends against max_connections (left, dashed); time transactions waited for a pooled connection, p99 (right, thin).",
			Axes: []present.Axis{{Label: "connections", Unit: "count", Text: "connections", Min: present.Zero()}, {Label: "pool wait p99", Unit: "ms", Min: present.Zero()}},
			What: "connection counts",
			Series: []present.Series{
				{Source: pgmetric.Database, Key: pgmetric.NumBackends, Label: "backends", Color: "#1f77b4", Width: 1.5, Name: "connections"},
				{Source: pgmetric.Database, Key: pgmetric.MaxConnections, Label: "max_connections", Color: "#d62728", Style: "dash", Width: 1, Ref: true},
			},
		},
		{
			ID: "slru", Title: "SLRU cache hit rate",
			Help:   "Share of SLRU page reads found in memory per tick; a fall means reads from disk (multixact and subtransaction storms show here). Gaps are ticks without reads.",
			Axes:   []present.Axis{{Label: "hit rate", Unit: "pct", Max: ptr(1)}},
			Sparse: "a hit rate exists only in ticks with SLRU page reads, and there were few",
			What:   "hit rates",
			Series: []present.Series{
				{Source: pgmetric.SLRU, Suffix: "." + pgmetric.SLRUFieldHitRate, Top: len(pgmetric.SLRUCaches), Width: 1.5, ByName: true},
			},
		},
		{
			Drawn: present.DrawnLevelAndFamily,
			ID:    "horizon", Title: "xmin horizon age and dead tuples",
			Help: fmt.Sprintf("How many transactions old the oldest snapshot is (left); dead tuples vacuum cannot yet remove (right, dashed: the %d tables with most, and all tables).", topTables),
			Axes: []present.Axis{{Label: "xmin age", Unit: "count", Text: "xids", Min: present.Zero()}, {Label: "dead tuples", Unit: "count", Text: "tuples", Min: present.Zero()}},
			Series: []present.Series{
				{Source: pgmetric.XminHorizon, Key: pgmetric.HorizonAge, Label: "xmin horizon age", Color: "#d62728", Width: 2, Name: "xmin horizon", What: "horizon age"},
				{Source: pgmetric.UserTables, Suffix: "." + pgmetric.TableNDeadTup, Top: topTables, Axis: 1, Style: "dash", Label: "tables", Name: "dead tuples", What: "dead tuples"},
			},
		},
	}
}

func ptr(v float64) *float64 { return &v }
