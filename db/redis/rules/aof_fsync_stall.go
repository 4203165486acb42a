package redisrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"strings"

	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// aofFsyncStall finds Redis stopping because its disk is slow to fsync
// the AOF (INCIDENTS.md §5): with appendfsync everysec the fsync runs in a
// background thread, and when the previous one is still running after
// 2 s the main thread writes the AOF anyway (aof_delayed_fsync) and that
// write() blocks until the fsync ends: every client stalls at once, about
// every 2 s, while the slow log stays empty.
type aofFsyncStall struct{}

var _ diagnose.Rule = aofFsyncStall{}

func (aofFsyncStall) ID() string { return "aof-fsync-stall" }

// Inputs names the sources the rule reads.
func (aofFsyncStall) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{rm.Info, rm.Latency}, Also: []string{rm.Slowlog, hostmetric.Host}}
}

// aofCriticalMS is the stall from which clients with ordinary timeouts
// fail rather than wait.
const aofCriticalMS = 1000

func (aofFsyncStall) Check(run *timeline.Run) []diagnose.Finding {
	delayed := counterMoments(run, rm.Info, rm.AOFDelayedFsync)
	pending := latencyMoments(run, rm.EventAOFWritePendingFsync)
	if len(delayed) == 0 && len(pending) == 0 {
		return nil
	}
	moments := append(append([]serverMoment{}, delayed...), pending...)
	stalls, medianP50 := clientStalls(run, redisStallMS)
	lined := stallsNear(stalls, moments)

	from, to := math.Inf(1), math.Inf(-1)
	for _, m := range moments {
		from, to = min(from, m.T-redisAlignS), max(to, m.T)
	}
	for _, s := range lined {
		from, to = min(from, s.Start), max(to, s.End)
	}
	from = max(from, 0)
	f := diagnose.Finding{Severity: diagnose.Info, Start: from, End: to,
		References: []string{
			"https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/",
			"https://redis.io/docs/latest/operate/oss_and_stack/management/optimization/latency/",
			"https://redis.io/docs/latest/operate/oss_and_stack/management/optimization/latency-monitor/",
		}}
	delayedTotal := sumMoments(delayed)
	if len(delayed) > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Info, rm.AOFDelayedFsync), T: delayed[0].T, Value: delayedTotal,
			Text: fmt.Sprintf("Redis wrote the AOF %s without waiting any longer for an fsync still running after 2 s (aof_delayed_fsync; it logs \"Asynchronous AOF fsync is taking too long\"), at %s",
				diagnose.Times(delayedTotal), momentTimes(delayed, 8))})
	}
	if len(pending) > 0 {
		worst := maxMoment(pending)
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Latency, rm.LatencyMax(rm.EventAOFWritePendingFsync)), T: worst.T, Value: worst.Value,
			Text: fmt.Sprintf("the latency monitor recorded aof-write-pending-fsync in %d %s, up to %s at %.0f s: the main thread's write() to the AOF waited that long for the fsync in flight",
				len(pending), plural(len(pending), "second", "seconds"), diagnose.HumanMS(worst.Value), worst.T)})
	}
	worstMS := 0.0
	if len(lined) > 0 {
		worst := worstStall(lined)
		worstMS = worst.MaxMS
		text := fmt.Sprintf("%d of %d client intervals with a transaction over %d ms lie within %.0f s of a delayed fsync; the worst took %s (%s at %.0f s), against %s typically",
			len(lined), len(stalls), redisStallMS, redisAlignS, diagnose.HumanMS(worst.MaxMS), worst.Workload, worst.Start, diagnose.HumanMS(medianP50))
		if period := stallPeriod(lined); period > 0 {
			text += fmt.Sprintf("; they come about every %.1f s", period)
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + worst.Workload + ".max_latency", T: worst.Start, Value: worst.MaxMS, Text: text})
		f.Workload = worst.Workload
		for _, s := range lined {
			if s.Workload != worst.Workload {
				f.Workload = "" // every workload stalls: the server stopped
				break
			}
		}
		f.Severity = diagnose.Warning
		if worst.MaxMS >= aofCriticalMS {
			f.Severity = diagnose.Critical
		}
	} else if len(run.Intervals) > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:max_latency",
			Text: fmt.Sprintf("no client interval had a transaction over %d ms near them: the stalls were short, or no client was writing then", redisStallMS)})
	}
	f.Evidence = append(f.Evidence, slowlogEvidence(run, from, to))
	for _, e := range diagnose.EventsOfKind(run, "disk_pressure", from, to) {
		text := fmt.Sprintf("event %s (disk_pressure) ran %.0f–%.0f s", e.Name, e.Start, e.End)
		if e.Outcome != "" {
			text += ": " + e.Outcome
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "event:" + e.Name, T: e.Start, Text: text})
	}
	if aw := diagnose.Over(run.Series(hostmetric.Host, hostmetric.DiskAwaitMS), from, to+1); aw.N > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "host:" + hostmetric.DiskAwaitMS, T: aw.MaxT, Value: aw.Max,
			Text: fmt.Sprintf("the disk's requests took %s on average, up to %s (a slow disk stand-in delays the server's syncs without showing here)", diagnose.HumanMS(aw.Mean), diagnose.HumanMS(aw.Max))})
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "settings:appendfsync",
		Text: "appendfsync = " + redisSetting(run, "appendfsync", "everysec (default)") +
			", no-appendfsync-on-rewrite = " + redisSetting(run, "no-appendfsync-on-rewrite", "no (default)") +
			", save = " + redisSetting(run, "save", "(not recorded)") +
			", auto-aof-rewrite-percentage = " + redisSetting(run, "auto-aof-rewrite-percentage", "100 (default)")})

	switch {
	case len(lined) > 0:
		f.Headline = fmt.Sprintf("Redis stops while its AOF fsync is slow: clients stalled up to %s", diagnose.HumanMS(worstMS))
		if period := stallPeriod(lined); period > 0 {
			f.Headline += fmt.Sprintf(" about every %.0f s", period)
		}
		var what []string
		if delayedTotal > 0 {
			what = append(what, fmt.Sprintf("%s delayed fsync %s", diagnose.HumanNum(delayedTotal), plural(int(delayedTotal), "write", "writes")))
		}
		if len(pending) > 0 {
			what = append(what, fmt.Sprintf("aof-write-pending-fsync up to %s", diagnose.HumanMS(maxMoment(pending).Value)))
		}
		f.Headline += " (" + strings.Join(what, ", ") + "); the slow log cannot show it"
	default:
		f.Headline = fmt.Sprintf("Redis's AOF fsync fell behind (%s delayed fsync %s, %d aof-write-pending-fsync %s) without stalling clients noticeably",
			diagnose.HumanNum(delayedTotal), plural(int(delayedTotal), "write", "writes"), len(pending), plural(len(pending), "event", "events"))
	}
	f.Mechanism = "With appendfsync everysec Redis writes the AOF from its single main thread and fsyncs it once a second in a background thread. " +
		"When the disk is busy (a backup copying a big file, another instance writing its RDB, an AOF rewrite) that fsync takes seconds; Redis then holds its AOF writes back for up to 2 s, and after that writes anyway (aof_delayed_fsync, \"Asynchronous AOF fsync is taking too long\"): the kernel blocks that write() until the fsync ends, and the whole server — every client — stops with it. " +
		"The slow log stays empty because it times only a command's execution; the stall happens in the event loop's AOF write, before replies go out and the next commands are read."
	f.Remedy = "While a bulk copy or backup runs on the same disk, `CONFIG SET appendfsync no` (the kernel flushes about every 30 s: up to that much loss on a crash) and set it back afterwards; or copy at a limited rate (rsync --bwlimit, ionice -c3). " +
		"Put the AOF on a disk of its own (an SSD that nothing else writes). Do not run RDB snapshots beside the AOF (`save \"\"`), and do not let AOF rewrites start at peak (`auto-aof-rewrite-percentage 0`, then BGREWRITEAOF off-peak; or `no-appendfsync-on-rewrite yes`). " +
		"Give clients timeouts and pools sized for a stall of this length, so that a stopped server does not pile up connections."
	return []diagnose.Finding{f}
}

// slowlogEvidence says what the slow log recorded in the window, and why
// a stall of the whole server leaves it empty.
func slowlogEvidence(run *timeline.Run, from, to float64) diagnose.Evidence {
	why := "the slow log times only a command's execution, and the server stopped outside any command (in the event loop), so it cannot show this stall"
	entries := run.Series(rm.Slowlog, rm.SlowlogNewEntries)
	if len(entries) == 0 {
		return diagnose.Evidence{Series: rm.Series(rm.Slowlog, rm.SlowlogNewEntries), Text: "the slow log was not sampled; " + why}
	}
	added := diagnose.SumPoints(entries, from, to+redisAlignS)
	if added == 0 {
		return diagnose.Evidence{Series: rm.Series(rm.Slowlog, rm.SlowlogNewEntries),
			Text: fmt.Sprintf("the slow log recorded nothing over slowlog-log-slower-than (%s µs) meanwhile: %s", redisSetting(run, "slowlog-log-slower-than", "10000"), why)}
	}
	longest := diagnose.Over(run.Series(rm.Slowlog, rm.SlowlogNewMaxMS), from, to+redisAlignS)
	return diagnose.Evidence{Series: rm.Series(rm.Slowlog, rm.SlowlogNewEntries), Value: added,
		Text: fmt.Sprintf("the slow log recorded %s %s meanwhile, the longest %s, none of them this stall: %s",
			diagnose.HumanNum(added), plural(int(added), "command", "commands"), diagnose.HumanMS(longest.Max), why)}
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
