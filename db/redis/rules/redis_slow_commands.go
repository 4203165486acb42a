package redisrules

import (
	"fmt"
	"math"
	"slices"

	"github.com/firedrill/firedrill/diagnose"
	"sort"
	"strings"

	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/timeline"
)

// redisSlowCommands finds commands that ran long in Redis's single main
// thread (the slow log): while one runs, every other client waits.
type redisSlowCommands struct{}

var _ diagnose.Rule = redisSlowCommands{}

func (redisSlowCommands) ID() string { return "redis-slow-commands" }

// Inputs names the sources the rule reads.
func (redisSlowCommands) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{rm.Slowlog}, Also: []string{rm.CommandStats}}
}

// slowCommandWarnMS is the run time from which one command holds every
// other client up noticeably.
const slowCommandWarnMS = 50

// A slow command is an outlier when fewer than outlierShare of its calls
// were slow and its mean run time is below 1/outlierFactor of its slowest.
const (
	outlierShare  = 0.001
	outlierFactor = 20
)

// commandCalls is a command's calls over the run and their mean run time
// (µs), from commandstats; 0 calls without it.
func commandCalls(run *timeline.Run, cmd string) (calls, meanUS float64) {
	var usec float64
	prevT := -1.0
	for _, s := range run.SourceSamples(rm.CommandStats) {
		if s.Error != "" {
			continue
		}
		if prevT >= 0 {
			n := s.Values[rm.CmdCalls(cmd)] * (s.T - prevT)
			calls += n
			usec += n * s.Values[rm.CmdUsecPerCall(cmd)]
		}
		prevT = s.T
	}
	if calls == 0 {
		return 0, 0
	}
	// The rates times the ticks add up to about the calls made: whole ones.
	return math.Max(1, math.Round(calls)), usec / calls
}

// forkingCommands run in the slow log for as long as their fork() took:
// that stall is redis-fork-stall's, not a command's work.
var forkingCommands = map[string]bool{"BGSAVE": true, "BGREWRITEAOF": true}

// Thresholds of the other clients' latency while slow commands run.
const (
	othersP99FloorMS = 10 // p99 at least this …
	othersP99Rise    = 5  // … and this many times what it was before
)

// p99Rise is a workload whose p99 rose while slow commands ran.
type p99Rise struct {
	workload         string
	beforeMS, duryMS float64
	at               float64
}

// othersP99Rises are the workloads, other than those issuing the slow
// commands (their scripts name them), whose interval p99 over [from, to]
// rose to othersP99FloorMS and othersP99Rise times its median before.
func othersP99Rises(run *timeline.Run, names []string, from, to float64) []p99Rise {
	var out []p99Rise
	for _, w := range run.Manifest.Workloads {
		if issues(run, w.Name, names) {
			continue
		}
		var before, during []timeline.Point
		worst := 0.0
		at := 0.0
		for _, iv := range run.WorkloadIntervals(w.Name) {
			p := timeline.Point{T: iv.End, V: float64(iv.LatencyPct.P99) / 1000}
			switch {
			case iv.End <= from:
				before = append(before, p)
			case iv.Start >= from-1 && iv.End <= to+1:
				during = append(during, p)
				if p.V > worst {
					worst, at = p.V, p.T
				}
			}
		}
		if len(before) < 3 || len(during) < 3 {
			continue
		}
		b := diagnose.Median(before, math.Inf(-1), math.Inf(1))
		d := diagnose.Median(during, math.Inf(-1), math.Inf(1))
		if d >= othersP99FloorMS && d >= othersP99Rise*b {
			out = append(out, p99Rise{workload: w.Name, beforeMS: b, duryMS: d, at: at})
		}
	}
	return out
}

// issues reports whether a workload's scripts run one of the commands.
func issues(run *timeline.Run, workload string, names []string) bool {
	if run.Summary == nil {
		return false
	}
	for _, w := range run.Summary.Workloads {
		if w.Name != workload {
			continue
		}
		for _, sc := range w.Scripts {
			for _, c := range sc.Commands {
				if f := strings.Fields(c.Text); len(f) > 0 && slices.Contains(names, strings.ToUpper(f[0])) {
					return true
				}
			}
		}
	}
	return false
}

// slowCommand is what the slow log says of one command name.
type slowCommand struct {
	name    string
	count   int
	maxUS   int64
	example []string
}

func (redisSlowCommands) Check(run *timeline.Run) []diagnose.Finding {
	added := counterMoments(run, rm.Slowlog, rm.SlowlogNewEntries)
	if len(added) == 0 {
		return nil
	}
	total := sumMoments(added)
	longest := diagnose.Over(run.Series(rm.Slowlog, rm.SlowlogNewMaxMS), 0, diagnose.RunEnd(run)+1)
	byName := map[string]*slowCommand{}
	for _, s := range run.SourceSamples(rm.Slowlog) {
		var entries []rm.SlowlogEntry
		if !diagnose.Detail(&s, &entries) {
			continue
		}
		for _, e := range entries {
			if len(e.Args) == 0 || forkingCommands[strings.ToUpper(e.Args[0])] {
				continue
			}
			name := strings.ToUpper(e.Args[0])
			c := byName[name]
			if c == nil {
				c = &slowCommand{name: name}
				byName[name] = c
			}
			c.count++
			if e.DurationUS > c.maxUS {
				c.maxUS, c.example = e.DurationUS, e.Args
			}
		}
	}
	var commands []*slowCommand
	for _, c := range byName {
		commands = append(commands, c)
	}
	if len(commands) == 0 {
		return nil // only forks (BGSAVE): redis-fork-stall's
	}
	sort.Slice(commands, func(i, j int) bool {
		if commands[i].maxUS != commands[j].maxUS {
			return commands[i].maxUS > commands[j].maxUS
		}
		return commands[i].name < commands[j].name
	})
	// A command whose calls are cheap on average and only a rare few of
	// them slow did not do the work itself: the server was held up
	// (descheduled on a busy CPU, a page fault on a busy disk, a stall
	// outside commands) while it ran.
	var costly, outliers []*slowCommand
	for _, c := range commands {
		calls, meanUS := commandCalls(run, strings.ToLower(c.name))
		if calls > 0 && float64(c.count)/calls < outlierShare && meanUS*outlierFactor < float64(c.maxUS) {
			outliers = append(outliers, c)
		} else {
			costly = append(costly, c)
		}
	}
	f := diagnose.Finding{Severity: diagnose.Info, Start: max(added[0].T-redisAlignS, 0), End: added[len(added)-1].T,
		References: []string{
			"https://redis.io/docs/latest/commands/slowlog-get/",
			"https://redis.io/docs/latest/operate/oss_and_stack/management/optimization/latency/#latency-generated-by-slow-commands",
		}}
	var costlyNames []string
	for _, c := range costly {
		costlyNames = append(costlyNames, c.name)
	}
	rises := othersP99Rises(run, costlyNames, f.Start, f.End)
	if len(costly) > 0 && (longest.Max >= slowCommandWarnMS || len(rises) > 0) {
		f.Severity = diagnose.Warning
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Slowlog, rm.SlowlogNewEntries), T: added[0].T, Value: total,
		Text: fmt.Sprintf("the slow log recorded %s %s over slowlog-log-slower-than (%s µs), the longest %s at %.0f s",
			diagnose.HumanNum(total), plural(int(total), "command", "commands"), redisSetting(run, "slowlog-log-slower-than", "10000"), diagnose.HumanMS(longest.Max), longest.MaxT)})
	var names []string
	for i, c := range commands {
		if i == 5 {
			break
		}
		text := fmt.Sprintf("%s: %d slow %s, the longest %s: %s", c.name, c.count, plural(c.count, "call", "calls"), diagnose.HumanMS(float64(c.maxUS)/1000), strings.Join(c.example, " "))
		if calls, meanUS := commandCalls(run, strings.ToLower(c.name)); calls > 0 {
			calls = math.Max(calls, float64(c.count)) // the slow ones were called
			text += fmt.Sprintf("; %s calls in the run, %s each on average (commandstats)", diagnose.HumanNum(calls), humanUS(meanUS))
		}
		if slices.Contains(outliers, c) {
			text += " — a rare outlier of a cheap command, not its own work"
		} else {
			names = append(names, c.name)
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Slowlog, "command:"+c.name), Value: float64(c.maxUS) / 1000, Text: text})
	}
	if stalls, _ := clientStalls(run, max(longest.Max*0.8, 1)); len(costly) > 0 && len(stallsNear(stalls, added)) > 0 {
		lined := stallsNear(stalls, added)
		worst := worstStall(lined)
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + worst.Workload + ".max_latency", T: worst.Start, Value: worst.MaxMS,
			Text: fmt.Sprintf("%d client %s with a transaction over %s lie within %.0f s of them: every client waits while one command runs",
				len(lined), plural(len(lined), "interval", "intervals"), diagnose.HumanMS(max(longest.Max*0.8, 1)), redisAlignS)})
	}
	for _, r := range rises {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + r.workload + ".p99", T: r.at, Value: r.duryMS,
			Text: fmt.Sprintf("%s's p99 rose from %s before them to a median %s per interval while they ran: its clients waited behind them",
				r.workload, diagnose.HumanMS(r.beforeMS), diagnose.HumanMS(r.duryMS))})
	}
	if len(costly) == 0 && len(outliers) > 0 {
		var cheap []string
		for _, c := range outliers {
			cheap = append(cheap, c.name)
		}
		f.Headline = fmt.Sprintf("A few calls of fast commands (%s) took up to %s: the server was held up, not the commands' work",
			strings.Join(cheap, ", "), diagnose.HumanMS(longest.Max))
		f.Mechanism = "These commands cost microseconds on average and only a handful of their calls were slow: the slow log's clock ran while Redis's main thread was not running — descheduled on a saturated CPU, waiting for a page fault on a busy disk — rather than while the command worked."
		f.Remedy = "Look at the host rather than the commands: CPU saturation (other processes, steal time on a VM), swapping or memory pressure, and transparent huge pages; give Redis a core of its own."
		return []diagnose.Finding{f}
	}
	what := "slow commands"
	if len(names) > 0 {
		what = strings.Join(names, ", ")
	}
	f.Headline = fmt.Sprintf("Slow commands held Redis's main thread: %s %s logged (%s), the longest %s",
		diagnose.HumanNum(total), plural(int(total), "command", "commands"), what, diagnose.HumanMS(longest.Max))
	f.Mechanism = "Redis runs commands one at a time in its main thread: a command that walks many elements (KEYS, SMEMBERS or HGETALL of a big key, LRANGE 0 -1, SORT, a long Lua script, DEL of a big key) keeps every other client waiting for as long as it runs."
	f.Remedy = "Replace whole-collection commands with their incremental forms: SCAN instead of KEYS, SSCAN/HSCAN/ZSCAN instead of SMEMBERS/HGETALL/ZRANGE 0 -1, LRANGE in pages. Delete big keys with UNLINK (freed in the background) and enable lazyfree-lazy-* . Keep values and collections small (split a big hash by key prefix), and scripts short."
	return []diagnose.Finding{f}
}
