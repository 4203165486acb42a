package mariadbmetric

// The layouts of the MariaDB sources' sample details (timeline.Sample's
// Detail, JSON): the samplers write them and the rules decode them, from
// these types only.

// Session is a session in the Processlist detail: the oldest open
// transactions first, then the longest running statements.
type Session struct {
	ID       int64   `json:"id"` // the thread (connection) id, as KILL takes it
	User     string  `json:"user"`
	DB       string  `json:"db,omitempty"`
	Command  string  `json:"command"`         // Query, Sleep, Execute …
	State    string  `json:"state,omitempty"` // "Sending data", "Waiting for query cache lock" …
	TimeS    float64 `json:"time_s"`          // in this command
	TrxAgeS  float64 `json:"trx_age_s,omitempty"`
	TrxState string  `json:"trx_state,omitempty"` // RUNNING, LOCK WAIT …
	Query    string  `json:"query,omitempty"`     // 300 characters
}

// BlockingPair is a transaction waiting for an InnoDB lock and a
// transaction it waits for, with the lock asked for.
type BlockingPair struct {
	BlockedID    int64   `json:"blocked_id"` // thread id
	BlockedTrx   string  `json:"blocked_trx"`
	BlockedQuery string  `json:"blocked_query"`
	WaitS        float64 `json:"wait_s"`
	LockType     string  `json:"lock_type"` // TABLE or RECORD
	LockMode     string  `json:"lock_mode"` // as INNODB_LOCKS: AUTO_INC, X, S,GAP, X,GAP …
	// Kind classifies the requested lock: LockAutoInc, LockTable,
	// LockRecord, LockNextKey, LockGap or LockInsertInt.
	Kind              string `json:"kind"`
	Table             string `json:"table"`
	Index             string `json:"index,omitempty"`
	LockData          string `json:"lock_data,omitempty"` // the locked record's key as INNODB_LOCKS shows it ("21", "supremum pseudo-record")
	BlockingID        int64  `json:"blocking_id"`
	BlockingTrx       string `json:"blocking_trx"`
	BlockingState     string `json:"blocking_state"`               // the blocker's trx_state (RUNNING, LOCK WAIT)
	BlockingOperation string `json:"blocking_operation,omitempty"` // its trx_operation_state ("inserting")
	BlockingQuery     string `json:"blocking_query"`
	// BlockingLastQuery is the last statement of a blocker that runs
	// none (idle in its transaction), from performance_schema's
	// events_statements_current/history; "" when performance_schema is
	// off or the blocker is running a statement.
	BlockingLastQuery string `json:"blocking_last_query,omitempty"`
}

// InnoDBStatusDetail is what SHOW ENGINE INNODB STATUS said: the latest
// deadlock it remembers and the transactions waiting for an AUTO-INC
// lock.
type InnoDBStatusDetail struct {
	Deadlock       *Deadlock `json:"deadlock,omitempty"`
	AutoIncWaiters []TrxWait `json:"autoinc_waiters,omitempty"`
}

// Deadlock is the "LATEST DETECTED DEADLOCK" section.
type Deadlock struct {
	Time         string        `json:"time"` // as the server printed it
	Transactions []DeadlockTrx `json:"transactions"`
	// RolledBack is the Number of the transaction chosen as the victim;
	// 0 when not said.
	RolledBack int `json:"rolled_back,omitempty"`
}

// DeadlockTrx is one transaction of a deadlock.
type DeadlockTrx struct {
	Number   int     `json:"number"` // (1), (2) …
	TrxID    string  `json:"trx_id"`
	ThreadID int64   `json:"thread_id,omitempty"`
	ActiveS  float64 `json:"active_s"`
	State    string  `json:"state,omitempty"` // "inserting", "setting auto-inc lock", "starting index read" …
	Query    string  `json:"query,omitempty"` // 500 characters
	// Waiting is the lock it waited for.
	Waiting *Lock `json:"waiting,omitempty"`
	// Holds are the locks it held that the other waited for (MySQL's
	// "HOLDS THE LOCK(S)") or, on MariaDB, the locks its wait conflicted
	// with ("CONFLICTING WITH", whichever transaction held them).
	Holds []Lock `json:"holds,omitempty"`
}

// Lock is one lock as the InnoDB monitor printed it.
type Lock struct {
	Kind     string `json:"kind"` // LockAutoInc, LockTable, LockRecord, LockNextKey, LockGap, LockInsertInt
	Mode     string `json:"mode"` // X, S, IX, IS, AUTO-INC
	Table    string `json:"table"`
	Index    string `json:"index,omitempty"`
	TrxID    string `json:"trx_id,omitempty"`
	Supremum bool   `json:"supremum,omitempty"` // on the page's supremum: the gap after the last record
	Waiting  bool   `json:"waiting,omitempty"`
}

// Gap reports whether the lock covers a gap between index records (what
// REPEATABLE READ's scans take and inserts collide with), rather than
// only records or a table.
func (l Lock) Gap() bool {
	return l.Kind == LockGap || l.Kind == LockNextKey || l.Kind == LockInsertInt || (l.Kind == LockRecord && l.Supremum)
}

// TrxWait is a transaction the monitor listed as waiting for a lock.
type TrxWait struct {
	TrxID    string  `json:"trx_id"`
	ThreadID int64   `json:"thread_id,omitempty"`
	WaitS    float64 `json:"wait_s"`
	Table    string  `json:"table"`
}
