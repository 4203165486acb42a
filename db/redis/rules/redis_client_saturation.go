package redisrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"

	rm "github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/timeline"
)

// redisClientSaturation finds Redis refusing connections because
// maxclients is reached (rejected_connections), or running close to it.
type redisClientSaturation struct{}

var _ diagnose.Rule = redisClientSaturation{}

func (redisClientSaturation) ID() string { return "redis-client-saturation" }

// Inputs names the sources the rule reads.
func (redisClientSaturation) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{rm.Info}}
}

// clientsNearShare is how close to maxclients the connections may come
// before it is worth saying.
const clientsNearShare = 0.9

func (redisClientSaturation) Check(run *timeline.Run) []diagnose.Finding {
	rejected := counterMoments(run, rm.Info, rm.RejectedConnections)
	connected := diagnose.Over(run.Series(rm.Info, rm.ConnectedClients), 0, diagnose.RunEnd(run)+1)
	maxClients := diagnose.Over(run.Series(rm.Info, rm.MaxClients), 0, diagnose.RunEnd(run)+1)
	near := maxClients.N > 0 && maxClients.Max > 0 && connected.N > 0 && connected.Max >= clientsNearShare*maxClients.Max
	if len(rejected) == 0 && !near {
		return nil
	}
	f := diagnose.Finding{Severity: diagnose.Warning, References: []string{
		"https://redis.io/docs/latest/develop/reference/clients/#maximum-concurrent-connected-clients",
		"https://redis.io/docs/latest/operate/oss_and_stack/reference/clients/",
	}}
	total := sumMoments(rejected)
	if len(rejected) > 0 {
		f.Severity, f.Lasting = diagnose.Critical, true // refused connections stay refused
		f.Start, f.End = max(rejected[0].T-redisAlignS, 0), rejected[len(rejected)-1].T
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Info, rm.RejectedConnections), T: rejected[0].T, Value: total,
			Text: fmt.Sprintf("Redis refused %s %s because maxclients was reached (rejected_connections; the client reads \"ERR max number of clients reached\"), at %s",
				diagnose.HumanNum(total), plural(int(total), "connection", "connections"), momentTimes(rejected, 8))})
	} else {
		f.Start, f.End = connected.MaxT, connected.MaxT
	}
	if connected.N > 0 {
		text := fmt.Sprintf("up to %s clients connected at %.0f s (the sampler's one included)", diagnose.HumanNum(connected.Max), connected.MaxT)
		if maxClients.N > 0 && maxClients.Max > 0 {
			text += fmt.Sprintf(", of maxclients %s (%s)", diagnose.HumanNum(maxClients.Max), diagnose.HumanPct(connected.Max/maxClients.Max))
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Info, rm.ConnectedClients), T: connected.MaxT, Value: connected.Max, Text: text})
	}
	if blocked := diagnose.Over(run.Series(rm.Info, rm.BlockedClients), 0, diagnose.RunEnd(run)+1); blocked.N > 0 && blocked.Max > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: rm.Series(rm.Info, rm.BlockedClients), T: blocked.MaxT, Value: blocked.Max,
			Text: fmt.Sprintf("up to %s of them waited in a blocking command (BLPOP, WAIT …): each holds its connection", diagnose.HumanNum(blocked.Max))})
	}
	if len(rejected) > 0 {
		f.Headline = fmt.Sprintf("Redis refused %s %s: maxclients (%s) reached", diagnose.HumanNum(total), plural(int(total), "connection", "connections"), diagnose.HumanNum(maxClients.Max))
	} else {
		f.Headline = fmt.Sprintf("Redis connections came within %s of maxclients (%s of %s)", diagnose.HumanPct(1-clientsNearShare), diagnose.HumanNum(connected.Max), diagnose.HumanNum(maxClients.Max))
	}
	f.Mechanism = "Redis accepts at most maxclients connections (and fewer when the process's open-file limit is lower); beyond that it answers a new connection with an error and closes it. Connection counts grow when each request opens its own connection, when pools are sized per thread on many hosts, when connections leak, or when slow replies make clients open more."
	f.Remedy = "Share a bounded connection pool per application process instead of a connection per request; close idle connections (`timeout 300` on the server, idle timeouts in the pool); look for leaks with CLIENT LIST (by name and age). " +
		"If the load really needs more connections, raise maxclients together with the open-file limit (ulimit -n ≥ maxclients + 32) — and check that the server can serve them."
	f, _ = diagnose.OneCause(run, f, diagnose.PoolFindings(run, redisPool))
	return []diagnose.Finding{f}
}
