package mariadb

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/sampler"
)

// innodbStatus reads SHOW ENGINE INNODB STATUS: the latest deadlock InnoDB
// detected (both transactions, their statements, the locks with their
// modes, gap or record), the transactions waiting for a table's AUTO-INC
// lock, and the redo log's positions. The server keeps only the latest
// deadlock; innodb_print_all_deadlocks writes every one to its error log.
//
// Source "mariadb_innodb_status". Values:
//
//	deadlock_new          count  1 when the latest detected deadlock is not the one of the previous reading (a deadlock or more in the interval), else 0
//	autoinc_waiting       count  transactions the monitor lists waiting for "lock mode AUTO-INC"
//	lock_waiting          count  transactions the monitor lists waiting for any lock (it lists a limited number)
//	history_list_length   count  undo log records not yet purged
//	checkpoint_age_bytes  bytes  log sequence number minus the last checkpoint
//	log_unflushed_bytes   bytes  log sequence number minus what is flushed to disk
//
// Detail: mariadbmetric.InnoDBStatusDetail: the deadlock when it is new,
// and up to 20 AUTO-INC waiters; nil when neither.
type innodbStatus struct {
	session *session
	// lastDeadlock identifies the deadlock of the previous reading.
	lastDeadlock string
	read         bool
}

var _ sampler.Sampler = (*innodbStatus)(nil)

const innodbStatusName = mariadbmetric.InnoDBStatus

// innodbStatusSQL asks for the monitor's text (columns Type, Name,
// Status).
var innodbStatusSQL = Marker + " SHOW ENGINE INNODB STATUS"

// maxAutoIncWaiters bounds the detail.
const maxAutoIncWaiters = 20

func (*innodbStatus) Name() string { return innodbStatusName }

func (smp *innodbStatus) Sample(ctx context.Context) (map[string]float64, any, error) {
	var text string
	err := smp.session.query(ctx, "read "+innodbStatusName, innodbStatusSQL, func(rows *sql.Rows) error {
		var typ, name string
		return rows.Scan(&typ, &name, &text)
	})
	if err != nil {
		return nil, nil, err
	}
	st := ParseInnoDBStatus(text)
	values := map[string]float64{
		mariadbmetric.StatusDeadlockNew:    0,
		mariadbmetric.StatusAutoIncWaiting: float64(len(st.AutoIncWaiters)),
		mariadbmetric.StatusLockWaiting:    float64(st.LockWaiting),
	}
	if st.HistoryLength >= 0 {
		values[mariadbmetric.StatusHistoryLength] = float64(st.HistoryLength)
	}
	if st.LSN >= 0 && st.Checkpoint >= 0 {
		values[mariadbmetric.StatusCheckpointAge] = float64(max(0, st.LSN-st.Checkpoint))
	}
	if st.LSN >= 0 && st.Flushed >= 0 {
		values[mariadbmetric.StatusLogUnflushed] = float64(max(0, st.LSN-st.Flushed))
	}
	var detail mariadbmetric.InnoDBStatusDetail
	if st.Deadlock != nil {
		id := st.Deadlock.Time
		for _, trx := range st.Deadlock.Transactions {
			id += " " + trx.TrxID
		}
		// The first reading's deadlock happened before the run started.
		if smp.read && id != smp.lastDeadlock {
			values[mariadbmetric.StatusDeadlockNew] = 1
			detail.Deadlock = st.Deadlock
		}
		smp.lastDeadlock = id
	}
	smp.read = true
	detail.AutoIncWaiters = st.AutoIncWaiters
	if len(detail.AutoIncWaiters) > maxAutoIncWaiters {
		detail.AutoIncWaiters = detail.AutoIncWaiters[:maxAutoIncWaiters]
	}
	if detail.Deadlock == nil && len(detail.AutoIncWaiters) == 0 {
		return values, nil, nil
	}
	return values, detail, nil
}

// InnoDBStatus is what ParseInnoDBStatus found in the monitor's text.
type InnoDBStatus struct {
	Deadlock       *mariadbmetric.Deadlock
	AutoIncWaiters []mariadbmetric.TrxWait
	LockWaiting    int   // transactions listed waiting for a lock
	HistoryLength  int64 // -1 when absent
	// Redo log positions; -1 when absent.
	LSN, Flushed, Checkpoint int64
}

// ParseInnoDBStatus reads the text of SHOW ENGINE INNODB STATUS (MariaDB
// 10.x and MySQL 5.7/8 layouts). It never fails: what it cannot read is
// left out. The text comes from a server, so it is treated as untrusted
// (the fuzz target holds it to that).
func ParseInnoDBStatus(text string) InnoDBStatus {
	st := InnoDBStatus{HistoryLength: -1, LSN: -1, Flushed: -1, Checkpoint: -1}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for _, sec := range sections(lines) {
		switch sec.title {
		case "LATEST DETECTED DEADLOCK":
			st.Deadlock = parseDeadlock(sec.lines)
		case "TRANSACTIONS":
			parseTransactions(sec.lines, &st)
		case "LOG":
			for _, l := range sec.lines {
				switch {
				case strings.HasPrefix(l, "Log sequence number"):
					st.LSN = firstInt(strings.TrimPrefix(l, "Log sequence number"))
				case strings.HasPrefix(l, "Log flushed up to"):
					st.Flushed = firstInt(strings.TrimPrefix(l, "Log flushed up to"))
				case strings.HasPrefix(l, "Last checkpoint at"):
					st.Checkpoint = firstInt(strings.TrimPrefix(l, "Last checkpoint at"))
				}
			}
		}
	}
	return st
}

// section is one titled part of the monitor's text.
type section struct {
	title string
	lines []string
}

// sections splits the text at its titles: a line framed by lines of
// dashes (or of equals signs).
func sections(lines []string) []section {
	var out []section
	rule := func(s string) bool {
		s = strings.TrimSpace(s)
		return len(s) >= 3 && strings.Trim(s, "-") == "" || len(s) >= 3 && strings.Trim(s, "=") == ""
	}
	for i := 0; i < len(lines); i++ {
		if i+2 < len(lines) && rule(lines[i]) && !rule(lines[i+1]) && strings.TrimSpace(lines[i+1]) != "" && rule(lines[i+2]) {
			out = append(out, section{title: strings.TrimSpace(lines[i+1])})
			i += 2
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].lines = append(out[len(out)-1].lines, lines[i])
		}
	}
	return out
}

// parseDeadlock reads the LATEST DETECTED DEADLOCK section.
func parseDeadlock(lines []string) *mariadbmetric.Deadlock {
	d := &mariadbmetric.Deadlock{}
	var trx *mariadbmetric.DeadlockTrx
	const (
		inHeader = iota
		inQuery
		inWaiting
		inHolds
	)
	mode := inHeader
	var query []string
	flushQuery := func() {
		if trx != nil && len(query) > 0 && trx.Query == "" {
			trx.Query = cut(strings.Join(query, " "), 500)
		}
		query = nil
	}
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		switch {
		case d.Time == "" && trx == nil && l != "" && !strings.HasPrefix(l, "***"):
			d.Time = cut(l, 64)
			continue
		case strings.HasPrefix(l, "*** (") && strings.HasSuffix(l, "TRANSACTION:"):
			flushQuery()
			d.Transactions = append(d.Transactions, mariadbmetric.DeadlockTrx{Number: parenNumber(l)})
			trx = &d.Transactions[len(d.Transactions)-1]
			mode = inHeader
			continue
		case strings.HasPrefix(l, "*** WE ROLL BACK TRANSACTION"):
			flushQuery()
			d.RolledBack = parenNumber(l)
			trx = nil
			continue
		case strings.HasPrefix(l, "***") && strings.Contains(l, "WAITING FOR THIS LOCK TO BE GRANTED"):
			flushQuery()
			trx = deadlockTrx(d, l, trx)
			mode = inWaiting
			continue
		case strings.HasPrefix(l, "***") && (strings.Contains(l, "HOLDS THE LOCK") || strings.Contains(l, "CONFLICTING WITH")):
			flushQuery()
			trx = deadlockTrx(d, l, trx)
			mode = inHolds
			continue
		}
		if trx == nil {
			continue
		}
		switch mode {
		case inHeader, inQuery:
			switch {
			case strings.HasPrefix(l, "TRANSACTION "):
				trx.TrxID, trx.ActiveS, trx.State = parseTrxLine(strings.TrimPrefix(l, "TRANSACTION "))
			case strings.HasPrefix(l, "MariaDB thread id ") || strings.HasPrefix(l, "MySQL thread id "):
				trx.ThreadID = firstInt(l[strings.Index(l, "thread id ")+len("thread id "):])
				mode = inQuery
			case mode == inQuery && l != "":
				query = append(query, l)
			}
		case inWaiting, inHolds:
			lock, ok := parseLockLine(l)
			if !ok {
				if lock := lastLock(trx, mode == inWaiting); lock != nil && supremumLine(l, lines, i) {
					lock.Supremum = true
				}
				continue
			}
			if mode == inWaiting && trx.Waiting == nil {
				trx.Waiting = &lock
			} else {
				trx.Holds = append(trx.Holds, lock)
			}
		}
	}
	flushQuery()
	if len(d.Transactions) == 0 {
		return nil
	}
	return d
}

// deadlockTrx is the transaction a "*** (N) …" heading names, or cur for
// MariaDB's headings without a number.
func deadlockTrx(d *mariadbmetric.Deadlock, heading string, cur *mariadbmetric.DeadlockTrx) *mariadbmetric.DeadlockTrx {
	if n := parenNumber(heading); n > 0 {
		for i := range d.Transactions {
			if d.Transactions[i].Number == n {
				return &d.Transactions[i]
			}
		}
	}
	return cur
}

// lastLock is the lock a "Record lock, heap no …" line under it belongs
// to.
func lastLock(trx *mariadbmetric.DeadlockTrx, waiting bool) *mariadbmetric.Lock {
	if waiting {
		return trx.Waiting
	}
	if len(trx.Holds) == 0 {
		return nil
	}
	return &trx.Holds[len(trx.Holds)-1]
}

// supremumLine reports whether a record line names the page's supremum
// (heap no 1, or the record dump "asc supremum;;" right after it).
func supremumLine(l string, lines []string, i int) bool {
	if strings.Contains(l, "asc supremum;;") {
		return true
	}
	if !strings.HasPrefix(l, "Record lock, heap no 1 ") {
		return false
	}
	return i+1 >= len(lines) || !strings.Contains(lines[i+1], "asc ") || strings.Contains(lines[i+1], "asc supremum;;")
}

// parseLockLine reads a "RECORD LOCKS …" or "TABLE LOCK …" line.
func parseLockLine(l string) (mariadbmetric.Lock, bool) {
	var lock mariadbmetric.Lock
	record := strings.HasPrefix(l, "RECORD LOCKS ")
	if !record && !strings.HasPrefix(l, "TABLE LOCK ") {
		return lock, false
	}
	if i := strings.Index(l, " index "); record && i >= 0 {
		lock.Index = firstWord(l[i+len(" index "):])
	}
	if i := strings.Index(l, "table "); i >= 0 {
		lock.Table = strings.ReplaceAll(firstWord(l[i+len("table "):]), "`", "")
	}
	if i := strings.Index(l, " trx id "); i >= 0 {
		lock.TrxID = firstWord(l[i+len(" trx id "):])
	}
	rest := ""
	for _, marker := range []string{"lock_mode ", "lock mode "} {
		if i := strings.Index(l, marker); i >= 0 {
			rest = l[i+len(marker):]
			break
		}
	}
	lock.Mode = firstWord(rest)
	flags := strings.TrimSpace(strings.TrimPrefix(rest, lock.Mode))
	lock.Waiting = strings.HasSuffix(flags, "waiting")
	switch {
	case !record && strings.Contains(lock.Mode, "AUTO"):
		lock.Kind = mariadbmetric.LockAutoInc
	case !record:
		lock.Kind = mariadbmetric.LockTable
	case strings.Contains(flags, "insert intention"):
		lock.Kind = mariadbmetric.LockInsertInt
	case strings.Contains(flags, "locks gap before rec"):
		lock.Kind = mariadbmetric.LockGap
	case strings.Contains(flags, "locks rec but not gap"):
		lock.Kind = mariadbmetric.LockRecord
	default:
		lock.Kind = mariadbmetric.LockNextKey
	}
	return lock, true
}

// parseTransactions reads the TRANSACTIONS section: the history list and
// the transactions waiting for locks.
func parseTransactions(lines []string, st *InnoDBStatus) {
	var trxID string
	var thread int64
	waitS := -1.0
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		switch {
		case strings.HasPrefix(l, "History list length"):
			st.HistoryLength = firstInt(strings.TrimPrefix(l, "History list length"))
		case strings.HasPrefix(l, "---TRANSACTION "):
			trxID, _, _ = parseTrxLine(strings.TrimPrefix(l, "---TRANSACTION "))
			thread, waitS = 0, -1
		case strings.HasPrefix(l, "MariaDB thread id ") || strings.HasPrefix(l, "MySQL thread id "):
			thread = firstInt(l[strings.Index(l, "thread id ")+len("thread id "):])
		case strings.HasPrefix(l, "------- TRX HAS BEEN WAITING "):
			st.LockWaiting++
			rest := strings.TrimPrefix(l, "------- TRX HAS BEEN WAITING ")
			n := firstInt(rest)
			switch unit := strings.Fields(rest); {
			case len(unit) > 1 && unit[1] == "us":
				waitS = float64(n) / 1e6
			case len(unit) > 1 && unit[1] == "SEC":
				waitS = float64(n)
			}
			if i+1 < len(lines) {
				if lock, ok := parseLockLine(strings.TrimSpace(lines[i+1])); ok && lock.Kind == mariadbmetric.LockAutoInc {
					st.AutoIncWaiters = append(st.AutoIncWaiters, mariadbmetric.TrxWait{TrxID: trxID, ThreadID: thread, WaitS: max(waitS, 0), Table: lock.Table})
				}
			}
		}
	}
}

// parseTrxLine reads "219198, ACTIVE 1 sec setting auto-inc lock" (also
// "ACTIVE (PREPARED) 3 sec", "not started").
func parseTrxLine(s string) (id string, activeS float64, state string) {
	id, rest, _ := strings.Cut(s, ",")
	id = strings.TrimSpace(id)
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "ACTIVE") {
		return id, 0, rest
	}
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "ACTIVE"))
	rest = strings.TrimSpace(strings.TrimPrefix(rest, "(PREPARED)"))
	fields := strings.Fields(rest)
	if len(fields) >= 2 && fields[1] == "sec" {
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			activeS = v
		}
		state = strings.Join(fields[2:], " ")
	}
	return id, activeS, cut(state, 100)
}

// parenNumber is N in "… (N) …"; 0 when none.
func parenNumber(s string) int {
	i := strings.Index(s, "(")
	j := strings.Index(s, ")")
	if i < 0 || j < i {
		return 0
	}
	n, err := strconv.Atoi(s[i+1 : j])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// firstInt is the leading integer of s after spaces; -1 when none.
func firstInt(s string) int64 {
	w := firstWord(s)
	w = strings.TrimRight(w, ",;")
	n, err := strconv.ParseInt(w, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func firstWord(s string) string {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}
