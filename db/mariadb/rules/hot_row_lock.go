package mariadbrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/sqlcheck"
	"math"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/timeline"
)

// hotRowLock finds InnoDB transactions queued on row locks (MariaDB/MySQL):
// how many wait on average, for which rows of which index, in which
// statements, behind which statements. Waits that concentrate on a few
// keys are hot rows: every writer of a popular row queues behind the one
// transaction that holds it until it commits.
type hotRowLock struct{}

var _ diagnose.Rule = hotRowLock{}

func (hotRowLock) ID() string { return "hot-row-lock-waits" }

// Inputs names the sources the rule reads.
func (hotRowLock) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{mariadbmetric.InnoDBLocks}, Also: []string{mariadbmetric.Processlist, mariadbmetric.GlobalStatus, mariadbmetric.Settings}}
}

// Thresholds: transactions waiting for a row or gap lock on average.
const (
	hotRowMinWaiting  = 0.5
	hotRowWarnWaiting = 2
)

func (hotRowLock) Check(run *timeline.Run) []diagnose.Finding {
	from, to := diagnose.LoadWindow(run)
	keys := []string{mariadbmetric.LockWaits(mariadbmetric.LockRecord), mariadbmetric.LockWaits(mariadbmetric.LockGap)}
	waiting, peak, samples := meanPerSample(run, mariadbmetric.InnoDBLocks, from, to, keys...)
	if samples < 3 || waiting < hotRowMinWaiting {
		return nil
	}
	active, _, _ := meanPerSample(run, mariadbmetric.Processlist, from, to, mariadbmetric.Active)
	type spot struct{ table, index, key string }
	spots := map[spot]int{}
	waiters, holders := statementCount{}, statementCount{}
	pairs := 0
	// Only the heads of the waits hold what the others want: a waiter
	// that others queue behind holds nothing yet. A head with no
	// statement running is idle in its transaction.
	heads, idleHeads := 0, 0
	idleIDs := map[int64]int{}
	firstWait, lastWait := math.Inf(1), math.Inf(-1)
	for _, s := range run.SourceSamples(mariadbmetric.InnoDBLocks) {
		if s.T < from || s.T >= to {
			continue
		}
		var ps []mariadbmetric.BlockingPair
		if !diagnose.Detail(&s, &ps) {
			continue
		}
		waitingTrx := map[string]bool{}
		for _, p := range ps {
			waitingTrx[p.BlockedTrx] = true
		}
		seenHead := map[string]bool{}
		for _, p := range ps {
			if p.Kind != mariadbmetric.LockRecord && p.Kind != mariadbmetric.LockGap {
				continue
			}
			firstWait, lastWait = math.Min(firstWait, s.T), math.Max(lastWait, s.T)
			pairs++
			key := p.LockData
			if key == "" {
				_, key = sqlcheck.SplitLiterals(p.BlockedQuery)
			}
			spots[spot{strings.ReplaceAll(p.Table, "`", ""), p.Index, key}]++
			waiters.add(p.BlockedQuery)
			if waitingTrx[p.BlockingTrx] || seenHead[p.BlockingTrx] {
				continue
			}
			seenHead[p.BlockingTrx] = true
			heads++
			if strings.TrimSpace(p.BlockingQuery) == "" {
				idleHeads++
				idleIDs[p.BlockingID]++
				continue
			}
			holders.add(p.BlockingQuery)
		}
	}
	winFrom, winTo := from, to
	if lastWait >= firstWait { // the waits, not the run
		winFrom, winTo = math.Max(from, firstWait-diagnose.Tick(run)), math.Min(to, lastWait+diagnose.Tick(run))
	}
	f := diagnose.Finding{Severity: diagnose.Info,
		References: []string{
			"https://dev.mysql.com/doc/refman/8.0/en/innodb-locking.html",
			"https://mariadb.com/kb/en/information-schema-innodb_lock_waits-table/",
		}}
	f.Start, f.End = winFrom, math.Max(winFrom, winTo-1e-9)
	if waiting >= hotRowWarnWaiting || (active > 0 && waiting/active >= 0.25 && waiting >= 1) {
		f.Severity = diagnose.Warning
	}
	if len(run.Manifest.Workloads) == 1 {
		f.Workload = run.Manifest.Workloads[0].Name
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, mariadbmetric.LockWaits(mariadbmetric.LockRecord)), T: peak.T, Value: waiting,
		Text: fmt.Sprintf("%s transactions waiting for a row lock on average, %s at the peak", diagnose.HumanNum(waiting), diagnose.HumanNum(peak.V))})
	if active > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.Active), Value: active,
			Text: fmt.Sprintf("of %s sessions running a statement on average: %s", diagnose.HumanNum(active), diagnose.HumanPct(math.Min(1, waiting/active)))})
	}
	if r := diagnose.Over(run.Series(mariadbmetric.GlobalStatus, mariadbmetric.RowLockWaitsPerS), from, to); r.N > 0 && r.Mean > 0 {
		t := diagnose.Over(run.Series(mariadbmetric.GlobalStatus, mariadbmetric.RowLockTimeMS), from, to)
		text := fmt.Sprintf("%s row lock waits/s (Innodb_row_lock_waits)", diagnose.HumanNum(r.Mean))
		if t.N > 0 && t.Mean > 0 {
			text += fmt.Sprintf(", %s waited per %s", diagnose.HumanMS(t.Mean), diagnose.HumanMS(diagnose.Tick(run)*1000))
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.RowLockWaitsPerS), Value: r.Mean, Text: text})
	}
	type counted struct {
		spot
		n int
	}
	var top []counted
	for s, n := range spots {
		top = append(top, counted{s, n})
	}
	sort.Slice(top, func(i, j int) bool {
		if top[i].n != top[j].n {
			return top[i].n > top[j].n
		}
		return top[i].key < top[j].key
	})
	var hot []string
	for i := 0; i < len(top) && i < 5; i++ {
		where := top[i].table
		if top[i].index != "" {
			where += " (" + top[i].index + ")"
		}
		key := top[i].key
		if key == "" {
			key = "?"
		}
		hot = append(hot, fmt.Sprintf("%s key %s: %s", where, key, diagnose.HumanPct(float64(top[i].n)/float64(max(pairs, 1)))))
	}
	if len(hot) > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, "lock_data"),
			Text: "the rows waited for most, of the sampled waits: " + strings.Join(hot, "; ")})
	}
	if q, _ := waiters.top(); q != "" {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, "blocked_query"), Text: "waiting: `" + diagnose.OneLine(q, 160) + "`"})
	}
	// An idle head is the cause only when idle-in-transaction-blocker
	// finds it holding on: heads between two statements of a short
	// transaction run no statement either.
	idleHead := false
	var idleID int64
	for _, b := range (idleBlocker{}).Check(run) {
		if b.End >= winFrom && b.Start <= winTo && heads > 0 && float64(idleHeads) >= 0.5*float64(heads) {
			idleHead = true
			for id, n := range idleIDs {
				if n > idleIDs[idleID] || (n == idleIDs[idleID] && id < idleID) {
					idleID = id
				}
			}
		}
	}
	if idleHead {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, "blocking_query"), Value: float64(idleID),
			Text: fmt.Sprintf("behind a transaction with no statement running (idle in its transaction) in %d of %d observations of the heads of the waits, most often connection %d", idleHeads, heads, idleID)})
	} else if q, _ := holders.top(); q != "" {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.InnoDBLocks, "blocking_query"), Text: "behind (the current statement of the transaction at the head of the waits; the lock may come from an earlier one of its transaction): `" + diagnose.OneLine(q, 160) + "`"})
	}
	if n, peak, _ := timeouts(run, f.Start, f.End+lockWaitTimeoutS(run)); n > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:errors." + lockWaitTimeoutCode, T: peak.T, Value: float64(n),
			Text: fmt.Sprintf("%d waits gave up after innodb_lock_wait_timeout = %s (error 1205)", n, formatSeconds(lockWaitTimeoutS(run)))})
	}
	concentrated := len(top) > 0 && pairs > 0 && top[0].key != "" && float64(top[0].n)/float64(pairs) >= 0.2
	switch {
	case len(top) > 0 && top[0].key == "" && float64(top[0].n)/float64(max(pairs, 1)) >= 0.5:
		where := top[0].table
		if top[0].index != "" {
			where += " (" + top[0].index + ")"
		}
		f.Headline = fmt.Sprintf("Row lock waits: %s transactions wait for row locks on average (peak %s), mostly on %s, for rows the samples do not name (multi-row statements)",
			diagnose.HumanNum(waiting), diagnose.HumanNum(peak.V), where)
	case concentrated:
		f.Headline = fmt.Sprintf("Hot rows: %s transactions wait for row locks on average (peak %s); %s alone draws %s of the waits",
			diagnose.HumanNum(waiting), diagnose.HumanNum(peak.V), strings.SplitN(hot[0], ":", 2)[0], diagnose.HumanPct(float64(top[0].n)/float64(pairs)))
	default:
		f.Headline = fmt.Sprintf("Row lock waits: %s transactions wait for InnoDB row locks on average (peak %s), spread over many rows",
			diagnose.HumanNum(waiting), diagnose.HumanNum(peak.V))
	}
	f.Mechanism = "InnoDB holds a row's lock from the statement that changes it until the transaction commits or rolls back; every other writer of that row waits (up to innodb_lock_wait_timeout). "
	unnamed := len(top) > 0 && top[0].key == "" && float64(top[0].n)/float64(max(pairs, 1)) >= 0.5
	cause := rowWaitCause(idleHead, concentrated, unnamed)
	f.Remedy = hotRowRemedy(cause, idleID)
	if cause == causeIdleHolder {
		f.Headline = fmt.Sprintf("Row lock waits behind an idle transaction: %s transactions wait for row locks on average (peak %s), most of the time behind connection %d, which runs no statement",
			diagnose.HumanNum(waiting), diagnose.HumanNum(peak.V), idleID)
		if len(hot) > 0 {
			f.Headline += "; " + strings.SplitN(hot[0], ":", 2)[0] + " draws " + strings.TrimSpace(strings.SplitN(hot[0], ":", 2)[1]) + " of the waits"
		}
	}
	switch cause {
	case causeIdleHolder:
		f.Mechanism += "Here the head of the waits was a transaction doing nothing: its session had stopped sending statements without committing, so everyone queued behind a session that was not working (see idle-in-transaction-blocker)."
	case causeHotRow, causeUnnamed:
		f.Mechanism += "When many transactions write the same few rows (a popular product, a counter, a chat's member count), they run one at a time on those rows however many sessions there are, and the wait grows with everything the holder does before its commit."
	default:
		f.Mechanism += "Here the waits are spread over many rows: no single row is hot; transactions that lock many rows, or hold them long, collide with each other wherever they overlap."
	}
	return []diagnose.Finding{f}
}

// The causes of row lock waits, each with its own remedy: a counter
// sharding advice fits a hot row, not waits spread over many keys nor a
// queue behind a session that does nothing.
const (
	causeHotRow     = "hot row"
	causeSpread     = "spread keys"
	causeIdleHolder = "idle holder"
	causeUnnamed    = "rows not named" // multi-row statements: hot or spread, the samples cannot tell
)

// rowWaitCause picks the cause the evidence shows: an idle head first (it
// explains a queue on any row), then one row drawing the waits.
func rowWaitCause(idleHead, concentrated, unnamed bool) string {
	switch {
	case idleHead:
		return causeIdleHolder
	case concentrated:
		return causeHotRow
	case unnamed:
		return causeUnnamed
	}
	return causeSpread
}

// hotRowRemedy is the fix for cause; idleID is the idle head's connection.
func hotRowRemedy(cause string, idleID int64) string {
	switch cause {
	case causeIdleHolder:
		return fmt.Sprintf("End the idle transaction at the head (`KILL %d;` rolls it back), make the server end such sessions (idle_transaction_timeout, idle_write_transaction_timeout), and commit before any remote call or user wait in the application; a lower innodb_lock_wait_timeout makes the waiters fail fast (retry on 1205) but does not shorten the hold.", idleID)
	case causeHotRow, causeUnnamed:
		return "Hold hot rows for less time: update them last in the transaction, just before COMMIT, and commit promptly (no network round trips or user think time inside). " +
			"Spread a hot counter over several rows (slots chosen at random, summed on read), or accumulate increments and apply them in batches. " +
			"Take several rows in one global order (ORDER BY key … FOR UPDATE) so that waits queue instead of deadlocking."
	}
	return "Shorten the transactions that hold these rows (fewer rows per transaction, no work between the first lock and COMMIT), lock the rows each transaction needs in one global order (ORDER BY key … FOR UPDATE) so that waits queue instead of deadlocking, " +
		"and make sure each statement locks only the rows it changes: an index for its WHERE clause (InnoDB locks every row a scan reads), and READ COMMITTED, where searches take no gap locks."
}
