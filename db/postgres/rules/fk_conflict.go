package pgrules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/sqlcheck"
	"github.com/firedrill/firedrill/timeline"
)

// fkConflict is a foreign-key lock conflict seen in the lock waits: an
// INSERT into the referencing (child) table waits because its
// foreign-key check locks the referenced (parent) row FOR KEY SHARE, and
// another transaction holds that row FOR UPDATE (or updates its key),
// which KEY SHARE conflicts with.
type fkConflict struct {
	FK     pgmetric.ForeignKey
	Insert string  // the waiting statement
	Share  float64 // of the sampled lock waits
	Holder *scriptCommand
}

// findFKConflict looks for the waiting statements that insert into a
// table with a foreign key (the end-of-run foreign_keys evidence) and a
// script statement that locks the referenced table's rows FOR UPDATE or
// updates its key columns. Without the foreign keys (live, before the
// run ends) it says nothing: an INSERT also waits on a duplicate key.
func findFKConflict(run *timeline.Run, spots []hotSpot, waits int) (fkConflict, bool) {
	fks := runForeignKeys(run)
	if len(fks) == 0 || waits == 0 {
		return fkConflict{}, false
	}
	for _, spot := range spots {
		st := sqlcheck.Classify(spot.Statement)
		for _, fk := range fks {
			if !insertsChecking(st, spot.Statement, fk) {
				continue
			}
			c := fkConflict{FK: fk, Insert: spot.Statement, Share: float64(spot.Waits) / float64(waits)}
			if c.Share < 0.25 {
				continue
			}
			c.Holder = parentLocker(run, fk)
			return c, true
		}
	}
	return fkConflict{}, false
}

// parentLocker is the first script statement that takes a lock on the
// referenced table that FOR KEY SHARE conflicts with: SELECT … FOR
// UPDATE, else a DELETE from it. An UPDATE that leaves the key alone
// takes FOR NO KEY UPDATE, which does not conflict; one that changes a
// key column would, but the scripts alone do not show the table's unique
// indexes, so it is not named.
func parentLocker(run *timeline.Run, fk pgmetric.ForeignKey) *scriptCommand {
	parent := strings.ToLower(fk.RefTable)
	var update *scriptCommand
	for _, ws := range workloadScripts(run) {
		for i := range ws.Commands {
			c := &ws.Commands[i]
			if c.Stmt.Lock == "FOR UPDATE" && slices.Contains(c.Stmt.Locked, parent) {
				return c
			}
			if update == nil && c.Stmt.Kind == sqlcheck.StmtWrite && slices.Contains(c.Stmt.Written, parent) &&
				strings.HasPrefix(strings.ToLower(strings.TrimSpace(sqlcheck.StripComments(c.Text))), "delete") {
				update = c
			}
		}
	}
	return update
}

// phrase is the headline's account of the conflict.
func (c fkConflict) phrase() string {
	s := fmt.Sprintf("a foreign-key lock conflict: %s of the waits are `%s`, whose check of %s (%s) locks the referenced %s row FOR KEY SHARE",
		diagnose.HumanPct(c.Share), diagnose.OneLine(c.Insert, 80), c.FK.Name, strings.Join(c.FK.Columns, ", "), c.FK.RefTable)
	if c.Holder != nil {
		s += fmt.Sprintf(", which `%s` (workload %s) holds against it", sqlcheck.Shorten(c.Holder.Text, 80), c.Holder.Workload)
	}
	return s
}

// evidence is what the finding shows of the conflict.
func (c fkConflict) evidence() []diagnose.Evidence {
	out := []diagnose.Evidence{{Series: pgmetric.Series(pgmetric.ForeignKeys, c.FK.Name), Value: c.Share,
		Text: fmt.Sprintf("%s of the sampled lock waits are inserts into %s (`%s`): its foreign key %s (%s) → %s (%s) makes each insert lock the parent row FOR KEY SHARE until it commits",
			diagnose.HumanPct(c.Share), c.FK.Table, diagnose.OneLine(c.Insert, 100), c.FK.Name, strings.Join(c.FK.Columns, ", "), c.FK.RefTable, strings.Join(c.FK.RefColumns, ", "))}}
	if c.Holder != nil {
		out = append(out, diagnose.Evidence{Series: c.Holder.series(),
			Text: fmt.Sprintf("workload %s locks %s rows with `%s`: FOR UPDATE (and an UPDATE or DELETE of the key) conflicts with FOR KEY SHARE, FOR NO KEY UPDATE does not", c.Holder.Workload, c.FK.RefTable, sqlcheck.Shorten(c.Holder.Text, 100))})
	}
	return out
}

// fkMechanism explains the conflict.
const fkMechanism = " Here the waiters are inserts into a table with a foreign key: to make sure the referenced row cannot vanish before the insert commits, PostgreSQL's check locks it FOR KEY SHARE. " +
	"That lock shares the row with other inserts and with FOR NO KEY UPDATE (what an UPDATE that leaves the key alone takes), but not with FOR UPDATE, nor with an UPDATE of the key or a DELETE: " +
	"every insert that references a parent row another transaction holds FOR UPDATE waits for that whole transaction, though it never touches the parent's table itself."

// The causes of lock waits, each with its own remedy (lockRemedy): the
// counter-sharding advice fits one hot row, not waits spread over many
// keys, a queue behind an idle session, or a foreign-key check.
const (
	lockCauseFK      = "foreign key"
	lockCauseIdle    = "idle holder"
	lockCauseHotRow  = "hot row"
	lockCauseSpread  = "spread keys"
	lockCauseUnnamed = "rows not named"
)

// lockCause picks the cause the evidence shows, most specific first.
// idleHeld says whether idle-in-transaction-blocker found a session idle
// at the head of the chains: heads idle only between two statements of
// a short transaction are a hot row's hand-overs, not an idle holder.
func lockCause(fk, idleHeld bool, spots []hotSpot) string {
	switch {
	case fk:
		return lockCauseFK
	case idleHeld:
		return lockCauseIdle
	case len(spots) == 0:
		return lockCauseUnnamed
	}
	key, share := spots[0].topKey()
	switch {
	case key == "":
		return lockCauseUnnamed
	case len(spots[0].Keys) == 1 || share >= 0.5:
		return lockCauseHotRow
	}
	return lockCauseSpread
}

// lockRemedy is the fix for cause.
func lockRemedy(cause string, fk fkConflict) string {
	const findHead = " Find the chain's head live with `SELECT pid, state, query FROM pg_stat_activity WHERE pid = ANY(pg_blocking_pids(<waiting pid>))`."
	switch cause {
	case lockCauseFK:
		return fmt.Sprintf("Lock the %s rows FOR NO KEY UPDATE instead of FOR UPDATE when the transaction does not change their key or delete them "+
			"(what a plain UPDATE of other columns takes): the inserts' FOR KEY SHARE checks do not conflict with it. Keep the parent's row lock short "+
			"(take it last, just before COMMIT, with no application work after it), or insert the %s rows before locking the parent, in one order in every transaction.", fk.FK.RefTable, fk.FK.Table) + findHead
	case lockCauseIdle:
		return "End the idle session at the head (`SELECT pg_terminate_backend(<pid>)`), make the server end such sessions by itself " +
			"(`idle_in_transaction_session_timeout`), commit before any remote call or user wait, and set `lock_timeout` so the waiters fail fast instead of queueing." + findHead
	case lockCauseHotRow:
		return "Take the hot row out of the line: update it last and commit right after (hold time = the rest of the transaction), " +
			"aggregate instead of updating one counter row (insert deltas and sum them, or spread the counter over N rows and add them up), " +
			"batch the increments of many requests into one UPDATE, and never keep a transaction open across application work " +
			"(`idle_in_transaction_session_timeout`, `lock_timeout` to fail fast instead of queueing)." + findHead
	case lockCauseSpread:
		return "The waits are spread over many keys, so no single row is to blame: shorten the transactions that hold these rows " +
			"(fewer rows per transaction, no application work between the first lock and COMMIT), lock the rows each transaction needs " +
			"in one global order (ORDER BY key … FOR UPDATE) so that waits queue instead of deadlocking, and set `lock_timeout` so the waiters fail fast." + findHead
	}
	return "Shorten the transactions that hold the contended rows (update them last and commit right after, no application work inside), " +
		"lock rows in one global order, and never keep a transaction open across application work " +
		"(`idle_in_transaction_session_timeout`, `lock_timeout` to fail fast instead of queueing)." + findHead
}
