package mariadbrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/timeline"
)

// The deadlock rule on MariaDB/MySQL: InnoDB's count (SHOW GLOBAL STATUS
// Innodb_deadlocks), the clients' 1213 errors, and the deadlocks the
// InnoDB monitor printed (both transactions, their statements, the locks:
// a row, a gap, an insert intention, an AUTO-INC table lock). A deadlock
// whose locks are gaps, between INSERT … SELECT … WHERE NOT EXISTS
// statements under REPEATABLE READ, is named as such: it is not a lock
// order the application can fix by sorting.

// Client error codes of InnoDB's deadlocks as db/mariadb/client records them
// ("SQLSTATE/number").
const (
	innodbDeadlockCode = "40001/1213" // ER_LOCK_DEADLOCK
	// ER_AUTOINC_READ_FAILED: InnoDB's answer when the deadlock victim
	// was waiting for the AUTO-INC lock (innodb_autoinc_lock_mode = 1).
	innodbAutoIncFailCode = "HY000/1467"
)

// innodbDeadlocks is what the run says about InnoDB deadlocks.
type innodbDeadlocks struct {
	Server      float64 // Innodb_deadlocks over the run
	ServerPeak  timeline.Point
	HaveServer  bool
	AutoIncFail int64 // 1467 errors
	Seen        []mariadbmetric.Deadlock
}

// countInnoDBDeadlocks adds InnoDB's deadlocks to c and returns what the
// monitor showed of them.
func countInnoDBDeadlocks(run *timeline.Run, c *deadlockCount) innodbDeadlocks {
	var d innodbDeadlocks
	tick := diagnose.Tick(run)
	for _, p := range run.Series(mariadbmetric.GlobalStatus, mariadbmetric.Deadlocks) {
		d.HaveServer = true
		if p.V <= 0 {
			continue
		}
		d.Server += p.V
		if p.V > d.ServerPeak.V {
			d.ServerPeak = p
		}
		c.First = math.Min(c.First, p.T-tick)
		c.Last = math.Max(c.Last, p.T)
	}
	if d.HaveServer {
		c.HaveServer = true
		c.Server += d.Server
		if d.ServerPeak.V > c.ServerPeak.V {
			c.ServerPeak = d.ServerPeak
		}
	}
	for _, iv := range run.Intervals {
		n := iv.Errors[innodbDeadlockCode]
		d.AutoIncFail += iv.Errors[innodbAutoIncFailCode]
		if n += iv.Errors[innodbAutoIncFailCode]; n > 0 {
			c.Client += n
			c.ByWorkload[iv.Workload] += n
			c.First = math.Min(c.First, iv.Start)
			c.Last = math.Max(c.Last, iv.End)
		}
	}
	for _, s := range run.SourceSamples(mariadbmetric.InnoDBStatus) {
		var detail mariadbmetric.InnoDBStatusDetail
		if diagnose.Detail(&s, &detail) && detail.Deadlock != nil {
			d.Seen = append(d.Seen, *detail.Deadlock)
			c.First = math.Min(c.First, s.T-tick)
			c.Last = math.Max(c.Last, s.T)
		}
	}
	return d
}

// deadlockShape sums up the deadlocks the monitor printed.
type deadlockShape struct {
	N                  int
	Gap, AutoInc, Rows int // deadlocks with a gap lock, an AUTO-INC lock, only record locks
	NotExists          int // deadlocks between INSERT … SELECT … NOT EXISTS statements
	Statements         statementCount
	Example            *mariadbmetric.Deadlock
}

func shapeOf(seen []mariadbmetric.Deadlock) deadlockShape {
	sh := deadlockShape{Statements: statementCount{}}
	for i := range seen {
		d := &seen[i]
		sh.N++
		gap, autoInc, notExists := false, false, true
		for _, trx := range d.Transactions {
			sh.Statements.add(trx.Query)
			if !notExistsInsert.MatchString(trx.Query) {
				notExists = false
			}
			locks := trx.Holds
			if trx.Waiting != nil {
				locks = append(locks[:len(locks):len(locks)], *trx.Waiting)
			}
			for _, l := range locks {
				gap = gap || l.Gap()
				autoInc = autoInc || l.Kind == mariadbmetric.LockAutoInc
			}
		}
		switch {
		case gap:
			sh.Gap++
		case !autoInc:
			sh.Rows++
		}
		if autoInc {
			sh.AutoInc++
		}
		if notExists && len(d.Transactions) > 0 {
			sh.NotExists++
		}
		if sh.Example == nil || (gap && !deadlockHasGap(sh.Example)) {
			sh.Example = d
		}
	}
	return sh
}

// describeLock names a lock for people: "an S next-key lock (a row and the
// gap before it) on index chat_user of oc.chat_member".
func describeLock(l *mariadbmetric.Lock) string {
	var what string
	switch l.Kind {
	case mariadbmetric.LockAutoInc:
		return "the AUTO-INC lock of " + l.Table
	case mariadbmetric.LockTable:
		return "a table lock in mode " + l.Mode + " on " + l.Table
	case mariadbmetric.LockRecord:
		what = "record lock"
		if l.Supremum {
			what = "lock on the gap after the last record (supremum)"
		}
	case mariadbmetric.LockNextKey:
		what = "next-key lock (a record and the gap before it)"
		if l.Supremum {
			what = "next-key lock on the gap after the last record (supremum)"
		}
	case mariadbmetric.LockGap:
		what = "gap lock"
	case mariadbmetric.LockInsertInt:
		what = "insert intention into a gap"
		if l.Supremum {
			what = "insert intention into the gap after the last record (supremum)"
		}
	default:
		what = l.Kind + " lock"
	}
	out := fmt.Sprintf("an %s %s", l.Mode, what)
	if l.Index != "" {
		out += " on index " + l.Index
	}
	return out + " of " + l.Table
}

// innodbDeadlockEvidence lists the monitor's deadlocks (the example in
// full, the statements of all).
func innodbDeadlockEvidence(d innodbDeadlocks, sh deadlockShape) []diagnose.Evidence {
	var out []diagnose.Evidence
	if d.AutoIncFail > 0 {
		out = append(out, diagnose.Evidence{Series: "workload:errors." + innodbAutoIncFailCode, Value: float64(d.AutoIncFail),
			Text: fmt.Sprintf("%s tries failed with 1467 \"Failed to read auto-increment value from storage engine\": InnoDB's error for a deadlock victim that was waiting for the AUTO-INC lock", diagnose.HumanNum(float64(d.AutoIncFail)))})
	}
	if sh.Example != nil {
		for _, trx := range sh.Example.Transactions {
			text := fmt.Sprintf("transaction (%d), thread %d, %s: `%s`", trx.Number, trx.ThreadID, strings.TrimSpace(trx.State), diagnose.OneLine(trx.Query, 160))
			if trx.Waiting != nil {
				text += " — waits for " + describeLock(trx.Waiting)
			}
			var held []string
			for i := range trx.Holds {
				if trx.Holds[i].TrxID != "" && trx.Holds[i].TrxID == trx.TrxID {
					continue // its own locks in the queue
				}
				if h := describeLock(&trx.Holds[i]); !slices.Contains(held, h) {
					held = append(held, h)
				}
			}
			if len(held) > 0 {
				text += ", held as " + strings.Join(held, "; ")
			}
			if sh.Example.RolledBack == trx.Number {
				text += " (rolled back)"
			}
			out = append(out, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBStatus, "deadlock"), Text: text})
		}
	}
	if sh.N > 0 {
		out = append(out, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBStatus, mariadbmetric.StatusDeadlockNew), Value: float64(sh.N),
			Text: fmt.Sprintf("of %d deadlocks the InnoDB monitor showed: %d on gaps, %d with an AUTO-INC lock, %d on records only, %d between INSERT … SELECT … NOT EXISTS statements",
				sh.N, sh.Gap, sh.AutoInc, sh.Rows, sh.NotExists)})
	}
	return out
}

// explainInnoDBDeadlock writes the finding's headline, mechanism and
// remedy for the deadlocks InnoDB showed, when they are gap-lock
// deadlocks; false leaves them to the script analysis.
func explainInnoDBDeadlock(run *timeline.Run, f *diagnose.Finding, rate string, sh deadlockShape) bool {
	if sh.N == 0 || sh.Gap*2 < sh.N {
		return false
	}
	isos := isolations(run)
	iso := strings.Join(isos, ", ")
	if sh.NotExists*2 >= sh.N {
		f.Headline = fmt.Sprintf("%s: gap-lock deadlocks of INSERT … SELECT … WHERE NOT EXISTS under %s — the existence check locks the gap the new row goes into, and two inserts into that gap wait for each other", rate, iso)
		if sh.AutoInc > 0 {
			f.Headline += fmt.Sprintf("; %d of %d also involve the AUTO-INC table lock", sh.AutoInc, sh.N)
		}
		f.Mechanism = "Under REPEATABLE READ the NOT EXISTS subquery of INSERT … SELECT is a locking read: it takes shared next-key locks on the index range it scans, including the gap where the new member would go (up to the supremum when it goes last). " +
			"Two concurrent inserts both get the shared lock on that gap (shared locks do not conflict), then each asks for an insert intention into it, which the other's shared lock blocks: a cycle, which InnoDB breaks at once by rolling one back (1213). "
		if sh.AutoInc > 0 {
			f.Mechanism += "With innodb_autoinc_lock_mode = 1 the statement also holds the table's AUTO-INC lock, so the cycle can run through it as well (the victim then fails with 1467, \"Failed to read auto-increment value\"). Mode 2 removes that part only: the gap-lock cycle stays. "
		}
		f.Mechanism += "It is not an order problem: each transaction takes one gap, in the same order; sorting keys cannot help."
		f.Remedy = "Run the join without gap locks: READ COMMITTED for it (`SET SESSION tx_isolation = 'READ-COMMITTED'`, or in the transaction) makes the NOT EXISTS scan a non-locking read, and then no gap is locked; " +
			"better, let a UNIQUE key decide: `UNIQUE (chat_id, user_id)` and `INSERT IGNORE INTO … VALUES (…)` (or ON DUPLICATE KEY UPDATE) checks and inserts in one index operation, which also makes it a simple insert that innodb_autoinc_lock_mode = 1 serves without the table lock. Retry 1213 meanwhile."
		if !slices.Contains(isos, "REPEATABLE-READ") && !slices.Contains(isos, "SERIALIZABLE") {
			f.Mechanism += " (The workloads here say " + iso + "; some session or the server default still ran REPEATABLE READ.)"
		}
		return true
	}
	f.Headline = fmt.Sprintf("%s on gap locks (isolation %s): range scans or inserts into the same index gaps", rate, iso)
	f.Mechanism = "Under REPEATABLE READ, InnoDB locks the gaps between index records that a locking read or an update scans, so that no other transaction can insert into them; two transactions that each lock a gap and then insert into the other's deadlock even when they never touch the same row."
	f.Remedy = "Look up rows by a unique key (an equality on a unique index locks the record only), or run these transactions at READ COMMITTED, where searches take no gap locks; retry 1213 meanwhile."
	return true
}

// innodbMechanismTail replaces the PostgreSQL wording of deadlock
// detection for InnoDB.
const innodbMechanismTail = " InnoDB finds the cycle as soon as it closes and rolls back the transaction with the least to undo (1213); every session queued behind the locked rows waits meanwhile."

// deadlockHasGap reports whether any lock of d covers a gap.
func deadlockHasGap(d *mariadbmetric.Deadlock) bool {
	for _, trx := range d.Transactions {
		if trx.Waiting != nil && trx.Waiting.Gap() {
			return true
		}
		for _, l := range trx.Holds {
			if l.Gap() {
				return true
			}
		}
	}
	return false
}
