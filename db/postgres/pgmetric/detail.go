package pgmetric

import (
	"encoding/json"
	"strconv"
)

// The layouts of the PostgreSQL sources' sample details (timeline.Sample's
// Detail, JSON): the samplers write them and the rules decode them, from
// these types only.

// BlockingPair is a session waiting for a lock and a session it waits for.
type BlockingPair struct {
	BlockedPID    int     `json:"blocked_pid"`
	BlockedApp    string  `json:"blocked_app"`
	BlockedQuery  string  `json:"blocked_query"`
	WaitS         float64 `json:"wait_s"`
	LockType      string  `json:"locktype"`
	Mode          string  `json:"mode"`
	Relation      string  `json:"relation,omitempty"` // regclass text
	BlockingPID   int     `json:"blocking_pid"`       // 0: a prepared transaction
	BlockingApp   string  `json:"blocking_app"`
	BlockingState string  `json:"blocking_state"`
	BlockingQuery string  `json:"blocking_query"`
}

// XminHolder is what holds the xmin horizon back: a session, a prepared
// transaction or a replication slot.
type XminHolder struct {
	Kind            string   `json:"kind"` // backend, prepared or slot
	Age             float64  `json:"age"`  // xids
	PID             int      `json:"pid,omitempty"`
	ApplicationName string   `json:"application_name,omitempty"`
	BackendType     string   `json:"backend_type,omitempty"`
	State           string   `json:"state,omitempty"` // a slot's: active or inactive
	XactAgeS        *float64 `json:"xact_age_s,omitempty"`
	Query           string   `json:"query,omitempty"`
	GID             string   `json:"gid,omitempty"`
	SlotName        string   `json:"slot_name,omitempty"`
}

// ActivitySession is a session in the pg_stat_activity detail.
type ActivitySession struct {
	PID             int      `json:"pid"`
	BackendType     string   `json:"backend_type"`
	ApplicationName string   `json:"application_name"`
	State           string   `json:"state"`
	Wait            string   `json:"wait,omitempty"` // "<type>:<event>", "CPU" when active without a wait event
	XactAgeS        float64  `json:"xact_age_s"`
	BackendXminAge  *float64 `json:"backend_xmin_age,omitempty"`
	BackendXID      string   `json:"backend_xid,omitempty"`
	Query           string   `json:"query"`
}

// Statement is one statement's share of an interval.
type Statement struct {
	QueryID         int64   `json:"queryid,string"` // a string in JSON: JavaScript cannot hold 64-bit integers
	Query           string  `json:"query"`
	Calls           float64 `json:"calls"`
	TotalMS         float64 `json:"total_ms"`
	MeanMS          float64 `json:"mean_ms"`
	Rows            float64 `json:"rows"`
	SharedBlksHit   float64 `json:"shared_blks_hit"`
	SharedBlksRead  float64 `json:"shared_blks_read"`
	TempBlksWritten float64 `json:"temp_blks_written"`
}

// DatabaseAges names the databases nearest to wraparound.
type DatabaseAges struct {
	OldestXidDatabase  string  `json:"oldest_xid_database"`
	DatfrozenxidAge    float64 `json:"datfrozenxid_age"`
	OldestMxidDatabase string  `json:"oldest_mxid_database"`
	MxidAge            float64 `json:"mxid_age"`
}

// ExplainedStatement is one of the run's top statements with the generic
// plan PostgreSQL chooses for it.
type ExplainedStatement struct {
	QueryID        string          `json:"queryid"` // a string: 64 bits
	Query          string          `json:"query"`   // as pg_stat_statements normalised it ($1 for constants)
	Calls          float64         `json:"calls"`
	MeanMS         float64         `json:"mean_ms"`
	TotalMS        float64         `json:"total_ms"`
	Rows           float64         `json:"rows"`
	SharedBlksHit  float64         `json:"shared_blks_hit"`
	SharedBlksRead float64         `json:"shared_blks_read"`
	Plan           json.RawMessage `json:"plan,omitempty"` // EXPLAIN (FORMAT JSON) output
	TotalCost      float64         `json:"total_cost,omitempty"`
	SeqScans       []PlanSeqScan   `json:"seq_scans,omitempty"`
	Sorts          []PlanSort      `json:"sorts,omitempty"`
	Error          string          `json:"error,omitempty"` // why there is no plan
}

// PlanSeqScan is a sequential scan node of a plan, with what the nodes
// above it ask of its rows: the order a Sort puts them in, the condition
// a join matches them on.
type PlanSeqScan struct {
	Relation     string  `json:"relation"`
	Schema       string  `json:"schema,omitempty"`
	Alias        string  `json:"alias,omitempty"`
	RowsEstimate float64 `json:"rows_estimate"`        // rows the node returns, after its filter
	TableRows    float64 `json:"table_rows,omitempty"` // pg_class.reltuples: rows the scan reads
	Filter       string  `json:"filter,omitempty"`
	Parallel     bool    `json:"parallel,omitempty"`
	// SortKeys are the keys of the Sort that orders this scan's rows
	// (directly, or through Gather/Limit-like nodes), if one does.
	SortKeys []string `json:"sort_keys,omitempty"`
	// JoinCond is the condition of the join this scan feeds (Hash Cond,
	// Merge Cond or Join Filter), if it does.
	JoinCond string `json:"join_cond,omitempty"`
	// SubPlan is true for a scan inside a correlated subquery: it runs
	// once per row of the outer query.
	SubPlan bool `json:"subplan,omitempty"`
}

// PlanSort is a sort node of a plan.
type PlanSort struct {
	Keys      []string `json:"keys"`
	Presorted []string `json:"presorted,omitempty"` // Incremental Sort: keys already in order
	Node      string   `json:"node,omitempty"`      // "Sort", "Incremental Sort"
}

// ID is the statement's queryid as findings and series name it
// ("pg_stat_statements:<ID>"): decimal, as in the detail's JSON.
func (s Statement) ID() string { return strconv.FormatInt(s.QueryID, 10) }

// Function is a SQL or PL/pgSQL function a workload's scripts call
// (directly, or through another such function), with its body: what the
// rules read to see row locks, writes and EXCEPTION blocks (each entry
// to one is a subtransaction) that the scripts themselves do not show.
type Function struct {
	Schema   string `json:"schema"`
	Name     string `json:"name"`
	Args     string `json:"args,omitempty"` // pg_get_function_identity_arguments
	Language string `json:"language"`       // plpgsql or sql
	Body     string `json:"body"`           // prosrc, cut at FunctionBodyMax bytes
}

// FunctionBodyMax bounds a function body kept in the run directory.
const FunctionBodyMax = 20000

// ForeignKey is a foreign key: inserting into Table, or changing its
// Columns, checks the referenced row of RefTable with SELECT … FOR KEY
// SHARE, a row lock that concurrent checks of the same row share.
type ForeignKey struct {
	Name       string   `json:"name"`
	Schema     string   `json:"schema"`
	Table      string   `json:"table"`
	Columns    []string `json:"columns"`
	RefSchema  string   `json:"ref_schema"`
	RefTable   string   `json:"ref_table"`
	RefColumns []string `json:"ref_columns"`
}
