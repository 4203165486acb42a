package diagnose

import (
	"fmt"
	"sort"
	"strings"

	rm "github.com/firedrill/firedrill/backend/redis/redismetric"
	"github.com/firedrill/firedrill/timeline"
)

// redisSlowCommands finds commands that ran long in Redis's single main
// thread (the slow log): while one runs, every other client waits.
type redisSlowCommands struct{}

var _ Rule = redisSlowCommands{}

func (redisSlowCommands) ID() string { return "redis-slow-commands" }

// Inputs names the sources the rule reads.
func (redisSlowCommands) Inputs() Inputs {
	return Inputs{AnyOf: []string{rm.Slowlog}, Also: []string{rm.CommandStats}}
}

// slowCommandWarnMS is the run time from which one command holds every
// other client up noticeably.
const slowCommandWarnMS = 50

// slowCommand is what the slow log says of one command name.
type slowCommand struct {
	name    string
	count   int
	maxUS   int64
	example []string
}

func (redisSlowCommands) Check(run *timeline.Run) []Finding {
	added := counterMoments(run, rm.Slowlog, rm.SlowlogNewEntries)
	if len(added) == 0 {
		return nil
	}
	total := sumMoments(added)
	longest := Over(run.Series(rm.Slowlog, rm.SlowlogNewMaxMS), 0, RunEnd(run)+1)
	byName := map[string]*slowCommand{}
	for _, s := range run.SourceSamples(rm.Slowlog) {
		var entries []rm.SlowlogEntry
		if !Detail(&s, &entries) {
			continue
		}
		for _, e := range entries {
			if len(e.Args) == 0 {
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
	sort.Slice(commands, func(i, j int) bool {
		if commands[i].maxUS != commands[j].maxUS {
			return commands[i].maxUS > commands[j].maxUS
		}
		return commands[i].name < commands[j].name
	})
	f := Finding{Severity: Info, Start: max(added[0].T-redisAlignS, 0), End: added[len(added)-1].T,
		References: []string{
			"https://redis.io/docs/latest/commands/slowlog-get/",
			"https://redis.io/docs/latest/operate/oss_and_stack/management/optimization/latency/#latency-generated-by-slow-commands",
		}}
	if longest.Max >= slowCommandWarnMS {
		f.Severity = Warning
	}
	f.Evidence = append(f.Evidence, Evidence{Series: rm.Series(rm.Slowlog, rm.SlowlogNewEntries), T: added[0].T, Value: total,
		Text: fmt.Sprintf("the slow log recorded %s %s over slowlog-log-slower-than (%s µs), the longest %s at %.0f s",
			humanNum(total), plural(int(total), "command", "commands"), redisSetting(run, "slowlog-log-slower-than", "10000"), humanMS(longest.Max), longest.MaxT)})
	var names []string
	for i, c := range commands {
		if i == 5 {
			break
		}
		names = append(names, c.name)
		text := fmt.Sprintf("%s: %d slow %s, the longest %s: %s", c.name, c.count, plural(c.count, "call", "calls"), humanMS(float64(c.maxUS)/1000), strings.Join(c.example, " "))
		if per := Over(run.Series(rm.CommandStats, rm.CmdUsecPerCall(strings.ToLower(c.name))), f.Start, f.End+1); per.N > 0 {
			text += fmt.Sprintf("; %s per call on average (commandstats)", humanMS(per.Mean/1000))
		}
		f.Evidence = append(f.Evidence, Evidence{Series: rm.Series(rm.Slowlog, "command:"+c.name), Value: float64(c.maxUS) / 1000, Text: text})
	}
	if stalls, _ := clientStalls(run, max(longest.Max*0.8, 1)); len(stallsNear(stalls, added)) > 0 {
		lined := stallsNear(stalls, added)
		worst := worstStall(lined)
		f.Evidence = append(f.Evidence, Evidence{Series: "workload:" + worst.Workload + ".max_latency", T: worst.Start, Value: worst.MaxMS,
			Text: fmt.Sprintf("%d client %s with a transaction over %s lie within %.0f s of them: every client waits while one command runs",
				len(lined), plural(len(lined), "interval", "intervals"), humanMS(max(longest.Max*0.8, 1)), redisAlignS)})
	}
	what := "slow commands"
	if len(names) > 0 {
		what = strings.Join(names, ", ")
	}
	f.Headline = fmt.Sprintf("Slow commands held Redis's main thread: %s %s logged (%s), the longest %s",
		humanNum(total), plural(int(total), "command", "commands"), what, humanMS(longest.Max))
	f.Mechanism = "Redis runs commands one at a time in its main thread: a command that walks many elements (KEYS, SMEMBERS or HGETALL of a big key, LRANGE 0 -1, SORT, a long Lua script, DEL of a big key) keeps every other client waiting for as long as it runs."
	f.Remedy = "Replace whole-collection commands with their incremental forms: SCAN instead of KEYS, SSCAN/HSCAN/ZSCAN instead of SMEMBERS/HGETALL/ZRANGE 0 -1, LRANGE in pages. Delete big keys with UNLINK (freed in the background) and enable lazyfree-lazy-* . Keep values and collections small (split a big hash by key prefix), and scripts short."
	return []Finding{f}
}
