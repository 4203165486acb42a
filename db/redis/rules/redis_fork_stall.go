package redisrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"

	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/timeline"
)

// redisForkStall finds Redis stopped by fork(): a BGSAVE or an AOF rewrite
// forks the server, and the fork copies its page tables in the main
// thread, which serves nothing meanwhile (latest_fork_usec, the latency
// monitor's fork event).
type redisForkStall struct{}

var _ diagnose.Rule = redisForkStall{}

func (redisForkStall) ID() string { return "redis-fork-stall" }

// Inputs names the sources the rule reads.
func (redisForkStall) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{rm.Info, rm.Latency}}
}

// Fork durations: under forkNoticeMS a fork is not worth a word (a small
// dataset forks in a millisecond or two); from forkWarnMS clients notice.
const (
	forkNoticeMS = 10
	forkWarnMS   = 100
)

func (redisForkStall) Check(run *timeline.Run) []diagnose.Finding {
	forks := counterMoments(run, rm.Info, rm.Forks)
	events := latencyMoments(run, rm.EventFork)
	if len(forks) == 0 && len(events) == 0 {
		return nil
	}
	// latest_fork_usec right after each fork is that fork's duration.
	usec := run.Series(rm.Info, rm.LatestForkUsec)
	var durations []serverMoment
	for _, f := range forks {
		if p, ok := diagnose.PointNear(usec, f.T, 0.01); ok {
			durations = append(durations, serverMoment{T: f.T, Value: p.V / 1000})
		}
	}
	durations = append(durations, events...)
	longest := maxMoment(durations)
	if longest.Value < forkNoticeMS {
		return nil
	}
	stalls, medianP50 := clientStalls(run, min(redisStallMS, longest.Value*0.8))
	moments := append(append([]serverMoment{}, forks...), events...)
	lined := stallsNear(stalls, moments)
	f := diagnose.Finding{Severity: diagnose.Info, Start: max(moments[0].T-redisAlignS, 0), End: moments[len(moments)-1].T,
		References: []string{
			"https://redis.io/docs/latest/operate/oss_and_stack/management/optimization/latency/#latency-generated-by-fork",
			"https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/",
		}}
	if longest.Value >= forkWarnMS || len(lined) > 0 {
		f.Severity = diagnose.Warning
	}
	if longest.Value >= aofCriticalMS {
		f.Severity = diagnose.Critical
	}
	count := sumMoments(forks)
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Info, rm.LatestForkUsec), T: longest.T, Value: longest.Value * 1000,
		Text: fmt.Sprintf("the longest fork stopped the server for %s at %.0f s (latest_fork_usec, latency event fork); %s %s in the run, at %s",
			diagnose.HumanMS(longest.Value), longest.T, diagnose.HumanNum(count), plural(int(count), "fork", "forks"), momentTimes(forks, 8))})
	if mem := diagnose.Over(run.Series(rm.Info, rm.UsedMemoryBytes), f.Start, f.End+1); mem.N > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Info, rm.UsedMemoryBytes), Value: mem.Max,
			Text: fmt.Sprintf("Redis held %s of data (used_memory): fork copies the page tables of all of it, about 10–20 ms per GB, more with transparent huge pages or on some hypervisors", diagnose.HumanBytes(mem.Max))})
	}
	bgsave := diagnose.SumPoints(run.Series(rm.Info, rm.RDBBgsaveInProgress), 0, diagnose.RunEnd(run)+1)
	rewrite := diagnose.SumPoints(run.Series(rm.Info, rm.AOFRewriteInProgress), 0, diagnose.RunEnd(run)+1)
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Info, rm.RDBBgsaveInProgress),
		Text: fmt.Sprintf("a background RDB save ran in %s samples, an AOF rewrite in %s; save = %s, auto-aof-rewrite-percentage = %s",
			diagnose.HumanNum(bgsave), diagnose.HumanNum(rewrite), redisSetting(run, "save", "(not recorded)"), redisSetting(run, "auto-aof-rewrite-percentage", "100 (default)"))})
	if len(lined) > 0 {
		worst := worstStall(lined)
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + worst.Workload + ".max_latency", T: worst.Start, Value: worst.MaxMS,
			Text: fmt.Sprintf("%d client %s with a slow transaction lie within %.0f s of a fork; the worst took %s, against %s typically",
				len(lined), plural(len(lined), "interval", "intervals"), redisAlignS, diagnose.HumanMS(worst.MaxMS), diagnose.HumanMS(medianP50))})
	}
	f.Headline = fmt.Sprintf("fork() stopped Redis for up to %s (%s %s for BGSAVE or AOF rewrite)", diagnose.HumanMS(longest.Value), diagnose.HumanNum(count), plural(int(count), "fork", "forks"))
	f.Mechanism = "BGSAVE and BGREWRITEAOF fork the server so that a child writes the snapshot. fork() runs in Redis's main thread and must copy the process's page tables, which takes time proportional to the memory used; no command is served meanwhile, and afterwards copy-on-write makes writes slower while the child runs."
	f.Remedy = "Do not snapshot at peak: with the AOF on, run no RDB beside it (`save \"\"`) and rewrite the AOF off-peak (`auto-aof-rewrite-percentage 0`, then BGREWRITEAOF from cron); or persist on a replica only. " +
		"Disable transparent huge pages (`echo never > /sys/kernel/mm/transparent_hugepage/enabled`), keep instances small (several smaller shards fork faster than one big one), and prefer hardware VMs or bare metal where fork is slow."
	return []diagnose.Finding{f}
}
