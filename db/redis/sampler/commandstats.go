package redis

import (
	"context"
	"strings"
	"time"

	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/sampler"
)

// Source "redis_commandstats" reads INFO commandstats once a second: per
// command, its calls and their mean run time in the interval. The
// samplers' own commands (ownCommands) are left out.
//
//	calls_per_s 1/s
//	<cmd>.calls_per_s 1/s
//	<cmd>.usec_per_call µs
//	<cmd>.failed_calls count
//	<cmd>.rejected_calls count
type commandStats struct {
	session  *session
	counters sampler.Counters
}

var _ sampler.Sampler = (*commandStats)(nil)

func (*commandStats) Name() string { return rm.CommandStats }

// ownCommands are what the samplers send, as commandstats names them.
var ownCommands = map[string]bool{
	"info": true, "ping": true, "latency|latest": true, "latency|history": true, "time": true,
	"slowlog|len": true, "slowlog|get": true, "client|setname": true, "auth": true, "select": true,
}

// commandStat is one command's line of INFO commandstats.
type commandStat struct {
	calls, usec, rejected, failed float64
}

func (s *commandStats) Sample(ctx context.Context) (map[string]float64, any, error) {
	reply, err := s.session.do(ctx, "INFO", "commandstats")
	if err != nil {
		return nil, nil, err
	}
	stats := parseCommandStats(parseInfo(reply.Str))
	counters := map[string]float64{}
	for cmd, st := range stats {
		if ownCommands[cmd] {
			continue
		}
		counters[cmd+".calls"] = st.calls
		counters[cmd+".usec"] = st.usec
		counters[cmd+".rejected"] = st.rejected
		counters[cmd+".failed"] = st.failed
	}
	iv := s.counters.Next(time.Now(), counters)
	if iv.Seconds <= 0 {
		return nil, nil, nil
	}
	values := map[string]float64{}
	total := 0.0
	for cmd := range stats {
		if ownCommands[cmd] {
			continue
		}
		calls, ok := iv.Delta(cmd + ".calls")
		if !ok {
			// A command first called in this interval was at 0 before.
			calls = counters[cmd+".calls"]
		}
		if calls == 0 {
			continue
		}
		total += calls
		values[rm.CmdCalls(cmd)] = calls / iv.Seconds
		if usec, ok := iv.Delta(cmd + ".usec"); ok {
			values[rm.CmdUsecPerCall(cmd)] = usec / calls
		}
		if failed, ok := iv.Delta(cmd + ".failed"); ok {
			values[rm.CmdFailed(cmd)] = failed
		}
		if rejected, ok := iv.Delta(cmd + ".rejected"); ok {
			values[rm.CmdRejected(cmd)] = rejected
		}
	}
	values[rm.CallsPerS] = total / iv.Seconds
	return values, nil, nil
}

// parseCommandStats reads the cmdstat_<cmd> fields of INFO commandstats:
// "calls=N,usec=N,usec_per_call=N.NN,rejected_calls=N,failed_calls=N"
// (Redis 6.2 added the last two). A field whose calls cannot be read is
// left out.
func parseCommandStats(fields map[string]string) map[string]commandStat {
	out := map[string]commandStat{}
	for field, value := range fields {
		cmd, ok := strings.CutPrefix(field, "cmdstat_")
		if !ok || cmd == "" {
			continue
		}
		var st commandStat
		hasCalls := false
		for _, part := range strings.Split(value, ",") {
			name, text, ok := strings.Cut(part, "=")
			if !ok {
				continue
			}
			v, ok := finite(text)
			if !ok || v < 0 {
				continue
			}
			switch name {
			case "calls":
				st.calls, hasCalls = v, true
			case "usec":
				st.usec = v
			case "rejected_calls":
				st.rejected = v
			case "failed_calls":
				st.failed = v
			}
		}
		if hasCalls {
			out[strings.ToLower(cmd)] = st
		}
	}
	return out
}
