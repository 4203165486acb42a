package mariadbrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// The commit-bound rule on MariaDB/MySQL: with
// innodb_flush_log_at_trx_commit = 1 every COMMIT (an autocommit
// statement's too) returns only once InnoDB's redo log is flushed to
// disk. The sessions then sit in the commit states of the process list
// (mariadbmetric.CommitStates), InnoDB flushes as fast as the device
// syncs, carrying every commit that queued meanwhile (group commit), and
// throughput is the flush rate times the commits a flush carries. It is
// one rule with PostgreSQL's (the same id, so thresholds and drills'
// expectations name one thing); only what it reads differs.

// commitBound is commit-bound on MariaDB/MySQL.
type commitBound struct{}

var _ diagnose.Rule = commitBound{}

func (commitBound) ID() string { return "commit-bound" }

// Inputs names the sources the rule reads.
func (commitBound) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{mariadbmetric.Processlist},
		Also: []string{hostmetric.Host, mariadbmetric.GlobalStatus, mariadbmetric.Settings}}
}

func (commitBound) Check(run *timeline.Run) []diagnose.Finding { return mariadbCommitBound(run) }

// Thresholds, as shares of active sessions: PostgreSQL's commit-bound's.
const (
	commitInfoShare = 0.25 // commit waits are a main part of active time
	commitWarnShare = 0.5  // and then they dominate it
	commitMinQueue  = 0.5  // sessions waiting for the flush on average, to say anything
)

// commitSmallRows is the most rows a transaction writes for it to count
// as a small write, whose commit is most of its cost.
const commitSmallRows = 2

// mariadbCommitBound finds active sessions dominated by commits waiting
// for the redo-log flush. Like PostgreSQL's, it is info when that is
// just what durable commits cost on this disk, and a warning when the
// flush queue is deeper than the CPUs: the sessions could do more work
// than the log device lets them commit, and the transactions are small
// writes (at most commitSmallRows rows each), which batching would
// spare most flushes.
func mariadbCommitBound(run *timeline.Run) []diagnose.Finding {
	from, to, flushAtCommit, ok := flushAtCommitSpan(run)
	if !ok {
		// 0 and 2 do not sync at commit: sessions cannot be waiting for it.
		return nil
	}
	var keys []string
	for _, state := range mariadbmetric.CommitStates {
		keys = append(keys, mariadbmetric.State(state))
	}
	waiting, peak, samples := meanPerSample(run, mariadbmetric.Processlist, from, to, keys...)
	active, _, _ := meanPerSample(run, mariadbmetric.Processlist, from, to, mariadbmetric.Active)
	if samples < 3 || active == 0 || waiting < commitMinQueue {
		return nil
	}
	share := math.Min(1, waiting/active)
	if share < commitInfoShare {
		return nil
	}
	status := func(key string) diagnose.Stats {
		return diagnose.Over(run.Series(mariadbmetric.GlobalStatus, key), from, to)
	}
	fsyncs := status(mariadbmetric.DataFsyncsPerS)
	if fsyncs.N > 0 && fsyncs.Mean < 1 {
		// Sessions in these states without InnoDB syncing: whatever they
		// wait for at commit, it is not the redo log's flush.
		return nil
	}
	cpus := diagnose.HostCPUs(run)
	// Only the workloads that write commit to the redo log: a read-only
	// workload beside them would dilute the rows written per transaction
	// and inflate the commits per flush.
	readOnly := diagnose.ReadOnlyWorkloads(run)
	tps := diagnose.WritingTPS(run, from, to)
	tpsWord := "transactions/s"
	if len(readOnly) > 0 {
		tpsWord = "writing transactions/s"
	}
	// Rows written per transaction: a small write pays a whole flush for
	// a few hundred bytes of log; a transaction of many rows has already
	// spread it, and its waits are what durability costs.
	rowsPerTrx := 0.0
	if written := status(mariadbmetric.Handler("update")).Mean + status(mariadbmetric.Handler("write")).Mean +
		status(mariadbmetric.Handler("delete")).Mean; tps > 0 && written > 0 {
		rowsPerTrx = written / tps
	}
	small := rowsPerTrx == 0 || rowsPerTrx <= commitSmallRows
	severity := diagnose.Info
	if share >= commitWarnShare && waiting >= cpus && small {
		severity = diagnose.Warning
	}
	f := diagnose.Finding{Severity: severity, Start: from, End: math.Max(from, to-1e-9),
		References: []string{
			"https://mariadb.com/kb/en/innodb-system-variables/#innodb_flush_log_at_trx_commit",
			"https://mariadb.com/kb/en/group-commit-for-the-binary-log/",
			"https://mariadb.com/kb/en/replication-and-binary-log-system-variables/#binlog_commit_wait_count",
			"https://dev.mysql.com/doc/refman/8.0/en/optimizing-innodb-logging.html",
		}}
	if len(run.Manifest.Workloads) == 1 {
		f.Workload = run.Manifest.Workloads[0].Name
	}
	var byState []string
	for _, state := range mariadbmetric.CommitStates {
		if n, _, _ := meanPerSample(run, mariadbmetric.Processlist, from, to, mariadbmetric.State(state)); n > 0 {
			byState = append(byState, fmt.Sprintf("\"%s\" %s", state, diagnose.HumanNum(n)))
		}
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.State("Updating status")+"+"+mariadbmetric.State("Commit")), T: peak.T, Value: share,
		Text: fmt.Sprintf("%s of the sessions running a statement are committing: %s of %s on average, %s at the peak (%s)",
			diagnose.HumanPct(share), diagnose.HumanNum(waiting), diagnose.HumanNum(active), diagnose.HumanNum(peak.V), strings.Join(byState, ", "))})

	perFlush := 0.0
	if fsyncs.N > 0 && fsyncs.Mean > 0 {
		text := fmt.Sprintf("%s InnoDB fsyncs/s (Innodb_data_fsyncs, the redo log's flushes and a few of the data files'): one every %s", diagnose.HumanNum(fsyncs.Mean), diagnose.HumanMS(1000/fsyncs.Mean))
		if tps > 0 {
			perFlush = tps / fsyncs.Mean
			text += fmt.Sprintf(", for %s %s: %s commits per flush (group commit)", diagnose.HumanNum(tps), tpsWord, diagnose.HumanNum(perFlush))
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.DataFsyncsPerS), Value: fsyncs.Mean, Text: text})
	}
	if len(readOnly) > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "manifest:workloads",
			Text: "not counted as commits (their scripts neither write nor lock rows): " + strings.Join(readOnly, ", ")})
	}
	if pend := status(mariadbmetric.DataPendingFsyncs); pend.N > 0 && pend.Mean > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.DataPendingFsyncs), Value: pend.Mean,
			Text: fmt.Sprintf("an fsync in flight in %s of the samples (Innodb_data_pending_fsyncs %s on average): the log device is syncing nearly all the time", diagnose.HumanPct(math.Min(1, pend.Mean)), diagnose.HumanNum(pend.Mean))})
	}
	if rowsPerTrx > 0 {
		rows := diagnose.HumanNum(rowsPerTrx) + " rows"
		if rows == "1 rows" {
			rows = "1 row"
		}
		text := rows + " written per transaction (Handler_update + Handler_write + Handler_delete per transaction)"
		if small {
			text += ": small writes, each paying a whole flush"
		} else {
			text += ": each flush already carries many rows; batching further gains less"
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, "handler.<write>_per_s"), Value: rowsPerTrx, Text: text})
	}
	if lat := commitLatency(run, from, to); lat > 0 && fsyncs.Mean > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:latency_p50", Value: lat,
			Text: fmt.Sprintf("transactions took %s (median of the intervals' p50), about %s flush intervals: a commit waits for the flush in progress and then its own",
				diagnose.HumanMS(lat), diagnose.HumanNum(lat/(1000/fsyncs.Mean)))})
	}
	if e, ok := commitScaling(run, from, to); ok {
		f.Evidence = append(f.Evidence, e)
	}
	for _, e := range diagnose.EventsOfKind(run, "disk_pressure", from, to) {
		if d, ok := e.Started["fsync_delay_ms"].(float64); ok && d > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "event:" + e.Name, T: e.Start,
				Text: fmt.Sprintf("event %s (disk_pressure, slow) made every fsync of the server %s slower from %.0f to %.0f s: a log device with slow syncs", e.Name, diagnose.HumanMS(d), e.Start, e.End)})
		}
	}
	logBin := strings.EqualFold(diagnose.Setting(run, "log_bin", "OFF"), "ON")
	syncBinlog := diagnose.Setting(run, "sync_binlog", "0")
	if logBin {
		if bc, bg := status(mariadbmetric.BinlogCommitsPerS), status(mariadbmetric.BinlogGroupsPerS); bc.N > 0 && bg.Mean > 0 {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.BinlogGroupsPerS), Value: bg.Mean,
				Text: fmt.Sprintf("binary log: %s commits/s in %s group commits/s, %s per group (sync_binlog = %s)", diagnose.HumanNum(bc.Mean), diagnose.HumanNum(bg.Mean), diagnose.HumanNum(bc.Mean/bg.Mean), syncBinlog)})
		}
	}
	if idle := diagnose.Over(run.Series(hostmetric.Host, hostmetric.CPUIdle), from, to); idle.N > 0 {
		iowait := diagnose.Over(run.Series(hostmetric.Host, hostmetric.CPUIowait), from, to)
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "host:cpu.idle", Value: idle.Mean,
			Text: fmt.Sprintf("host CPU %.0f %% idle and %.0f %% in I/O wait on average, %s CPUs (the machine may be shared)", idle.Mean, iowait.Mean, diagnose.HumanNum(cpus))})
	}
	settings := "innodb_flush_log_at_trx_commit = " + flushAtCommit + ", innodb_flush_method = " + diagnose.Setting(run, "innodb_flush_method", "?") +
		", log_bin = " + diagnose.Setting(run, "log_bin", "?")
	if logBin {
		settings += ", sync_binlog = " + syncBinlog + ", binlog_commit_wait_count = " + diagnose.Setting(run, "binlog_commit_wait_count", "0") +
			", binlog_commit_wait_usec = " + diagnose.Setting(run, "binlog_commit_wait_usec", "100000")
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "settings:innodb_flush_log_at_trx_commit", Text: settings})

	if severity == diagnose.Warning {
		f.Headline = fmt.Sprintf("Commit-bound: %s of active sessions wait for the redo-log flush at commit (%s of %s, on %s CPUs) with innodb_flush_log_at_trx_commit = %s",
			diagnose.HumanPct(share), diagnose.HumanNum(waiting), diagnose.HumanNum(active), diagnose.HumanNum(cpus), flushAtCommit)
	} else {
		f.Headline = fmt.Sprintf("Commits wait for the redo-log flush: %s of active sessions (%s on average)", diagnose.HumanPct(share), diagnose.HumanNum(waiting))
	}
	if tps > 0 {
		f.Headline += fmt.Sprintf("; %s %s", diagnose.HumanNum(tps), tpsWord)
	}
	if perFlush > 0 {
		f.Headline += fmt.Sprintf(", %s commits per flush", diagnose.HumanNum(perFlush))
	}
	if severity == diagnose.Info {
		if !small {
			f.Headline += fmt.Sprintf(" (%s rows per transaction)", diagnose.HumanNum(rowsPerTrx))
		}
		f.Headline += " — what every commit costs with innodb_flush_log_at_trx_commit = " + flushAtCommit + " on this disk, not a fault"
	}
	f.Mechanism = "With innodb_flush_log_at_trx_commit = 1, COMMIT (and every autocommit statement that writes) returns only once InnoDB has written its redo log and fsynced it: " +
		"the session shows \"Updating status\" or \"Commit\" meanwhile. One flush carries every commit that queued while the previous one ran (group commit), " +
		"so throughput is the log device's sync rate times the commits per flush, whatever the CPUs could do, and a small transaction pays a whole fsync for a few hundred bytes."
	if logBin && syncBinlog == "1" {
		f.Mechanism += " With log_bin on and sync_binlog = 1 each binary log group commit syncs the binary log too, before InnoDB's commit."
	}
	if severity == diagnose.Warning {
		f.Mechanism += " Here more sessions queue on the flush than there are CPUs: the log device, not work, sets the pace."
	}
	f.Remedy = "Commit less often: batch many row changes per transaction (BEGIN; 100 UPDATEs; COMMIT pays one flush instead of 100), or multi-row INSERTs. " +
		"Put the redo log (innodb_log_group_home_dir) on a device with fast, power-safe syncs (a write-back cache with a battery or capacitor; measure the sync latency with fio --fsync=1). " +
		"Where losing up to about a second of committed transactions in an operating system crash or power loss is acceptable (a mariadbd crash alone loses nothing), " +
		"set innodb_flush_log_at_trx_commit = 2 (SET GLOBAL, no restart): the log is written at each commit and synced once a second."
	if logBin {
		f.Remedy += fmt.Sprintf(" The binary log is on: group commit can gather more transactions per sync with binlog_commit_wait_count (about the sessions committing at once, %.0f here) and binlog_commit_wait_usec (e.g. 2000), which adds up to that delay to a commit", math.Max(2, math.Round(waiting)))
		if syncBinlog == "1" {
			f.Remedy += "; sync_binlog = 1 syncs the binary log per group as well (0 leaves it to the OS, at the price of a binary log that may lag the data after an OS crash)"
		}
		f.Remedy += "."
	} else {
		f.Remedy += " (Without the binary log there is no group-commit wait to tune: InnoDB already groups the commits that queue during a flush.)"
	}
	if severity == diagnose.Info {
		f.Remedy = "Nothing is wrong: this is the price of durable commits here. If more throughput is needed, " + strings.ToLower(f.Remedy[:1]) + f.Remedy[1:]
	}
	return []diagnose.Finding{f}
}

// commitLatency is the median of the writing workloads' interval p50 latencies in
// the window, ms (0 without intervals).
func commitLatency(run *timeline.Run, from, to float64) float64 {
	var pts []timeline.Point
	writers := diagnose.Writers(run) // a read-only workload commits nothing
	for _, iv := range run.Intervals {
		if iv.Count == 0 || iv.End <= from || iv.Start >= to || !writers[iv.Workload] {
			continue
		}
		pts = append(pts, timeline.Point{T: iv.End, V: float64(iv.LatencyPct.P50) / 1000})
	}
	if len(pts) == 0 {
		return 0
	}
	return diagnose.Median(pts, math.Inf(-1), math.Inf(1))
}

// commitScaling compares the fewest and the most clients of a writing
// workload that ramps (at least twice as many): with group commit the
// transactions/s grow with the clients while the flushes per second stay
// where the device puts them, each flush carrying more commits, and the
// latency stays a flush interval or two. Measured on the slow disk
// (every fsync +5 ms): 2 → 16 clients took 119 → 1,193 transactions/s at
// about 130 flushes/s throughout, p50 13 ms at both ends. Only one
// workload's own levels are a scaling series: two workloads with
// different client counts run different transactions side by side.
func commitScaling(run *timeline.Run, from, to float64) (diagnose.Evidence, bool) {
	writers := diagnose.Writers(run)
	var names []string
	for _, iv := range run.Intervals {
		if writers[iv.Workload] && !slices.Contains(names, iv.Workload) {
			names = append(names, iv.Workload)
		}
	}
	best, bestRatio := diagnose.Evidence{}, 0.0
	for _, w := range names {
		if e, ratio, ok := workloadScaling(run, w, len(names) > 1, from, to); ok && ratio > bestRatio {
			best, bestRatio = e, ratio
		}
	}
	return best, bestRatio > 0
}

// workloadScaling is commitScaling's evidence for one workload, and how
// many times its clients grew; named says the text names the workload.
func workloadScaling(run *timeline.Run, workload string, named bool, from, to float64) (diagnose.Evidence, float64, bool) {
	type level struct {
		count      int64
		seconds    float64
		start, end float64
		p50        []timeline.Point
	}
	levels := map[int]*level{}
	for _, iv := range run.WorkloadIntervals(workload) {
		if iv.End <= from || iv.Start >= to || iv.Clients <= 0 {
			continue
		}
		l := levels[iv.Clients]
		if l == nil {
			l = &level{start: iv.Start, end: iv.End}
			levels[iv.Clients] = l
		}
		l.count += iv.Count
		l.seconds += iv.End - iv.Start
		l.start, l.end = min(l.start, iv.Start), max(l.end, iv.End)
		if iv.Count > 0 {
			l.p50 = append(l.p50, timeline.Point{T: iv.End, V: float64(iv.LatencyPct.P50) / 1000})
		}
	}
	fewest, most := 0, 0
	for c, l := range levels {
		if l.seconds < 3*diagnose.Tick(run) { // a level passed through, not held
			continue
		}
		if fewest == 0 || c < fewest {
			fewest = c
		}
		if c > most {
			most = c
		}
	}
	if fewest == 0 || most < 2*fewest {
		return diagnose.Evidence{}, 0, false
	}
	lo, hi := levels[fewest], levels[most]
	flushes := func(l *level) float64 {
		return diagnose.Over(run.Series(mariadbmetric.GlobalStatus, mariadbmetric.DataFsyncsPerS), l.start+diagnose.Tick(run), l.end+1e-9).Mean
	}
	loF, hiF := flushes(lo), flushes(hi)
	if loF <= 0 || hiF <= 0 {
		return diagnose.Evidence{}, 0, false
	}
	loTPS, hiTPS := float64(lo.count)/lo.seconds, float64(hi.count)/hi.seconds
	median := func(l *level) float64 { return diagnose.Median(l.p50, math.Inf(-1), math.Inf(1)) }
	who := ""
	if named {
		who = workload + " "
	}
	return diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.DataFsyncsPerS), Value: hiF / loF,
		Text: fmt.Sprintf("%sfrom %d to %d clients: %s → %s transactions/s while InnoDB flushed %s → %s times/s (%s → %s commits per flush), p50 %s → %s: more clients only put more commits in each flush",
			who, fewest, most, diagnose.HumanNum(loTPS), diagnose.HumanNum(hiTPS), diagnose.HumanNum(loF), diagnose.HumanNum(hiF), diagnose.HumanNum(loTPS/loF), diagnose.HumanNum(hiTPS/hiF), diagnose.HumanMS(median(lo)), diagnose.HumanMS(median(hi)))}, float64(most) / float64(fewest), true
}

// flushAtCommitSpan is the longest part of the load in which
// innodb_flush_log_at_trx_commit was 1 (or 3, MariaDB's old spelling of
// 1 with group commit): the run's setting at its start, changed by the
// snapshots a settings event leaves (mariadbmetric.Settings). value is
// the setting as the span had it; ok is false when it never was.
func flushAtCommitSpan(run *timeline.Run) (from, to float64, value string, ok bool) {
	loadFrom, loadTo := diagnose.LoadWindow(run)
	syncs := func(v string) bool { v = strings.TrimSpace(v); return v == "1" || v == "3" }
	cur := strings.TrimSpace(diagnose.Setting(run, "innodb_flush_log_at_trx_commit", "1"))
	on := syncs(cur)
	start := loadFrom
	consider := func(end float64) {
		if on && end > start && (!ok || end-start > to-from) {
			from, to, value, ok = start, end, cur, true
		}
	}
	for i := range run.Samples {
		smp := &run.Samples[i]
		if smp.Source != mariadbmetric.Settings || smp.Error != "" || smp.T >= loadTo {
			continue
		}
		var settings map[string]string
		if !diagnose.Detail(smp, &settings) {
			continue
		}
		v, found := settings["innodb_flush_log_at_trx_commit"]
		if !found || syncs(v) == on {
			continue
		}
		t := max(smp.T, loadFrom)
		consider(t)
		on, start, cur = syncs(v), t, strings.TrimSpace(v)
	}
	consider(loadTo)
	return from, to, value, ok
}
