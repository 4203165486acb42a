package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// commitBound finds active time dominated by commits waiting for the WAL
// flush (LWLock:WALWrite queued behind the flusher, IO:WALSync and
// IO:WALWrite in the flush itself). That is the nature of a write
// workload with synchronous_commit = on on a disk with slow fsync, so it
// is info; it becomes a warning when commit waits hold back throughput
// the server could otherwise deliver: most active sessions wait for the
// flush, more of them than there are CPUs, while few run on a CPU.
// MariaDB has its own commit-bound (db/mariadb/rules), under the same id.
type commitBound struct{}

var _ diagnose.Rule = commitBound{}

func (commitBound) ID() string { return "commit-bound" }

// Inputs names the sources the rule reads.
func (commitBound) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.Activity},
		Also: []string{pgmetric.Database, pgmetric.WAL, hostmetric.Host}}
}

// Thresholds, as shares of active time.
const (
	commitInfoShare = 0.25 // commit waits are a main part of active time
	commitWarnShare = 0.5  // and then they dominate it
	commitMinQueue  = 0.5  // sessions waiting for the flush on average, to say anything
)

// isCommitWait reports whether a wait event is a commit waiting for the
// WAL to reach disk.
func isCommitWait(event string) bool {
	switch event {
	case "LWLock:WALWrite", "LWLock:WALWriteLock", "IO:WALSync", "IO:WALWrite", "IO:WALInitSync", "IO:WALInitWrite":
		return true
	}
	return false
}

func (commitBound) Check(run *timeline.Run) []diagnose.Finding {
	from, to := diagnose.LoadWindow(run)
	w := waitsIn(run, from, to, isCommitWait)
	if w.Samples < 3 || w.Waiting == 0 {
		return nil
	}
	share, queue := w.Share(), w.MeanWaiting()
	if share < commitInfoShare || queue < commitMinQueue {
		return nil
	}
	cpus := diagnose.HostCPUs(run)
	onCPU := waitsIn(run, from, to, func(e string) bool { return e == "CPU" }).MeanWaiting()
	syncOff := strings.EqualFold(diagnose.Setting(run, "synchronous_commit", "on"), "off")
	severity := diagnose.Info
	// Throughput held back: most active time is the flush, the flush
	// queue is deeper than the CPUs, and the CPUs are not what limits.
	if share >= commitWarnShare && queue >= cpus && onCPU < cpus/2 {
		severity = diagnose.Warning
	}
	f := diagnose.Finding{Severity: severity, Start: from, End: math.Max(from, to-1e-9),
		References: []string{
			"https://www.postgresql.org/docs/current/wal-async-commit.html",
			"https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-SYNCHRONOUS-COMMIT",
			"https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-COMMIT-DELAY",
			"https://www.postgresql.org/docs/current/wal-configuration.html",
			"https://www.postgresql.org/docs/current/pgtestfsync.html",
		}}
	if len(run.Manifest.Workloads) == 1 {
		f.Workload = run.Manifest.Workloads[0].Name
	}
	var events []string
	for _, e := range w.TopEvents() {
		events = append(events, fmt.Sprintf("%s %s", e, diagnose.HumanNum(w.ByEvent[e]/float64(w.Samples))))
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "pg_stat_activity:wait.LWLock:WALWrite+IO:WALSync+IO:WALWrite", T: w.PeakT, Value: share,
		Text: fmt.Sprintf("%s of active time is commits waiting for the WAL flush: %s of %s active sessions on average (%s)",
			diagnose.HumanPct(share), diagnose.HumanNum(queue), diagnose.HumanNum(w.MeanActive()), strings.Join(events, ", "))})
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.Activity, pgmetric.WaitCPU), Value: onCPU,
		Text: fmt.Sprintf("%s sessions on CPU on average, on %s CPUs", diagnose.HumanNum(onCPU), diagnose.HumanNum(cpus))})
	commits := diagnose.Over(run.Series(pgmetric.Database, pgmetric.XactCommitPerS), from, to)
	syncs := diagnose.Over(run.Series(pgmetric.WAL, pgmetric.WALSyncPerS), from, to)
	// Only transactions that write wait for the flush: beside read-only
	// workloads (whose commits pg_stat_database counts too) the commits
	// per flush are the writing workloads' transactions.
	readOnly := diagnose.ReadOnlyWorkloads(run)
	tps := diagnose.WritingTPS(run, from, to)
	commitsPerS, commitsText := commits.Mean, "commits/s"
	if len(readOnly) > 0 && tps > 0 {
		commitsPerS, commitsText = tps, "writing transactions/s"
		commits.N = max(commits.N, 1)
	}
	perFlush := 0.0
	if commits.N > 0 && syncs.N > 0 && syncs.Mean > 0 {
		perFlush = commitsPerS / syncs.Mean
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "wal:wal_sync_per_s", Value: syncs.Mean,
			Text: fmt.Sprintf("%s %s with %s WAL flushes/s: %s commits per flush (group commit), one flush every %s",
				diagnose.HumanNum(commitsPerS), commitsText, diagnose.HumanNum(syncs.Mean), diagnose.HumanNum(perFlush), diagnose.HumanMS(1000/syncs.Mean))})
	}
	if len(readOnly) > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "manifest:workloads",
			Text: "not counted as commits (their scripts neither write nor lock rows): " + strings.Join(readOnly, ", ")})
	}
	if st := diagnose.Over(run.Series(pgmetric.WAL, pgmetric.WALSyncTimeMS), from, to); st.N > 0 && st.Mean > 0 && syncs.Mean > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "wal:wal_sync_time_ms", Value: st.Mean / (syncs.Mean * diagnose.Tick(run)),
			Text: fmt.Sprintf("%s per WAL flush (track_wal_io_timing)", diagnose.HumanMS(st.Mean/(syncs.Mean*diagnose.Tick(run))))})
	}
	idle := diagnose.Over(run.Series(hostmetric.Host, hostmetric.CPUIdle), from, to)
	iowait := diagnose.Over(run.Series(hostmetric.Host, hostmetric.CPUIowait), from, to)
	if idle.N > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "host:cpu.idle", Value: idle.Mean,
			Text: fmt.Sprintf("host CPU %.0f %% idle and %.0f %% in I/O wait on average (the machine may be shared)", idle.Mean, iowait.Mean)})
	}
	if aw := diagnose.Over(run.Series(hostmetric.Host, hostmetric.DiskAwaitMS), from, to); aw.N > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "host:disk.await_ms", Value: aw.Mean,
			Text: fmt.Sprintf("disk requests took %s on average", diagnose.HumanMS(aw.Mean))})
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "settings:synchronous_commit",
		Text: "synchronous_commit = " + diagnose.Setting(run, "synchronous_commit", "on (default)") + ", commit_delay = " + diagnose.Setting(run, "commit_delay", "0") +
			", wal_sync_method = " + diagnose.Setting(run, "wal_sync_method", "default")})

	if severity == diagnose.Warning {
		f.Headline = fmt.Sprintf("Commit-bound: %s of active time is commits waiting for the WAL flush (%s of %s active sessions, %s on CPU of %s CPUs)",
			diagnose.HumanPct(share), diagnose.HumanNum(queue), diagnose.HumanNum(w.MeanActive()), diagnose.HumanNum(onCPU), diagnose.HumanNum(cpus))
	} else {
		f.Headline = fmt.Sprintf("Commits wait for the WAL flush: %s of active time (%s sessions on average)",
			diagnose.HumanPct(share), diagnose.HumanNum(queue))
	}
	if tps > 0 {
		f.Headline += fmt.Sprintf("; %s %s", diagnose.HumanNum(tps), writingWord(readOnly))
	}
	if perFlush > 0 {
		f.Headline += fmt.Sprintf(", %s commits per flush", diagnose.HumanNum(perFlush))
	}
	if severity == diagnose.Info {
		f.Headline += " — what every commit costs with synchronous_commit = on on this disk, not a fault"
	}
	f.Mechanism = "With synchronous_commit = on, COMMIT returns only once its WAL is flushed to disk: the flushing session waits in IO:WALSync/IO:WALWrite and every other committer queues on LWLock:WALWrite until that flush covers its record. " +
		"Throughput is then the flush rate times the commits each flush carries, whatever the CPUs could do; small transactions that each commit pay the whole fsync."
	if severity == diagnose.Warning {
		f.Mechanism += " Here the sessions queue on the flush while CPUs stay mostly unused, so commit I/O, not work, sets the pace."
	}
	if syncOff {
		f.Mechanism = "synchronous_commit is already off, yet sessions still wait in WAL writes: the WAL buffers fill faster than the WAL writer empties them (wal_buffers, disk write bandwidth), or some transactions set synchronous_commit = on."
	}
	f.Remedy = "Commit less often: batch many row changes per transaction (one commit for 100 decrements instead of 100). " +
		"Where losing the last few hundred milliseconds of committed transactions in a server crash is acceptable (never corruption), use `SET synchronous_commit = off` for those transactions or sessions. " +
		"With many concurrent committers, commit_delay (e.g. 1000 µs) with commit_siblings (5) makes a flush wait briefly to carry more commits. Otherwise put WAL on storage with fast fsync (measure with pg_test_fsync)."
	if severity == diagnose.Info {
		f.Remedy = "Nothing is wrong: this is the price of durable commits here. If more throughput is needed, " + strings.ToLower(f.Remedy[:1]) + f.Remedy[1:]
	}
	return []diagnose.Finding{f}
}

// writingWord names the transactions a rule counted: "writing
// transactions/s" when read-only workloads were left out.
func writingWord(readOnly []string) string {
	if len(readOnly) > 0 {
		return "writing transactions/s"
	}
	return "transactions/s"
}
