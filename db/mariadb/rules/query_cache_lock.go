package mariadbrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"strings"

	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/timeline"
)

// queryCacheLock finds sessions queued on the query cache's one global
// lock (MariaDB, MySQL 5.7): every SELECT looks the cache up under it,
// every stored result takes it, and every write to a table drops all the
// cached results of that table under it. With writes streaming into a
// table whose reads are cached, the cache turns into a global mutex: the
// sessions wait "Waiting for query cache lock" while the results they
// would hit are gone already.
type queryCacheLock struct{}

var _ diagnose.Rule = queryCacheLock{}

func (queryCacheLock) ID() string { return "query-cache-contention" }

// Inputs names the sources the rule reads.
func (queryCacheLock) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{mariadbmetric.Processlist}, Also: []string{mariadbmetric.GlobalStatus}}
}

// Thresholds: sessions in a query cache state on average, and at the peak.
const (
	qcacheMinWaiting  = 0.3
	qcacheMinPeak     = 2
	qcacheWarnWaiting = 1
)

func (queryCacheLock) Check(run *timeline.Run) []diagnose.Finding {
	from, to := diagnose.LoadWindow(run)
	var keys []string
	for _, state := range mariadbmetric.QueryCacheStates {
		keys = append(keys, mariadbmetric.State(state))
	}
	waiting, peak, samples := meanPerSample(run, mariadbmetric.Processlist, from, to, keys...)
	if samples < 3 || waiting < qcacheMinWaiting || peak.V < qcacheMinPeak {
		return nil
	}
	lockWait, _, _ := meanPerSample(run, mariadbmetric.Processlist, from, to, mariadbmetric.State(mariadbmetric.StateQueryCacheLock))
	active, _, _ := meanPerSample(run, mariadbmetric.Processlist, from, to, mariadbmetric.Active)
	f := diagnose.Finding{Severity: diagnose.Info, Start: from, End: math.Max(from, to-1e-9),
		References: []string{
			"https://mariadb.com/kb/en/query-cache/#limitations",
			"https://mariadb.com/kb/en/server-system-variables/#query_cache_type",
			"https://dev.mysql.com/doc/refman/5.7/en/query-cache.html",
		}}
	if waiting >= qcacheWarnWaiting || (active > 0 && waiting/active >= 0.1) {
		f.Severity = diagnose.Warning
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.State(mariadbmetric.StateQueryCacheLock)), T: peak.T, Value: waiting,
		Text: fmt.Sprintf("%s sessions in a query cache state on average (%s of them \"%s\"), %s at the peak", diagnose.HumanNum(waiting), diagnose.HumanNum(lockWait), mariadbmetric.StateQueryCacheLock, diagnose.HumanNum(peak.V))})
	if active > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.Processlist, mariadbmetric.Active), Value: active,
			Text: fmt.Sprintf("of %s sessions running a statement on average: %s", diagnose.HumanNum(active), diagnose.HumanPct(math.Min(1, waiting/active)))})
	}
	series := func(key string) diagnose.Stats {
		return diagnose.Over(run.Series(mariadbmetric.GlobalStatus, key), from, to)
	}
	invalid, inserts, hits := series(mariadbmetric.QcacheInvalidPerS), series(mariadbmetric.QcacheInsertsPerS), series(mariadbmetric.QcacheHitsPerS)
	if invalid.N > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.QcacheInvalidPerS), Value: invalid.Mean,
			Text: fmt.Sprintf("%s cached results/s dropped because their table changed, of %s stored/s: what is cached is gone before it is read", diagnose.HumanNum(invalid.Mean), diagnose.HumanNum(inserts.Mean))})
	}
	selects := series(mariadbmetric.ComSelectPerS)
	if hits.N > 0 && selects.N > 0 && hits.Mean+selects.Mean > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, mariadbmetric.QcacheHitsPerS), Value: hits.Mean,
			Text: fmt.Sprintf("%s of reads answered from the cache (%s hits/s, %s SELECTs/s executed)", diagnose.HumanPct(hits.Mean/(hits.Mean+selects.Mean)), diagnose.HumanNum(hits.Mean), diagnose.HumanNum(selects.Mean))})
	}
	writes := series(mariadbmetric.ComInsertPerS).Mean + series(mariadbmetric.ComInsertSelectPerS).Mean + series(mariadbmetric.ComUpdatePerS).Mean + series(mariadbmetric.Com("delete")).Mean
	if writes > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: mariadbmetric.Series(mariadbmetric.GlobalStatus, "com.<write>_per_s"), Value: writes,
			Text: fmt.Sprintf("%s writes/s (INSERT, INSERT … SELECT, UPDATE, DELETE), each invalidating its table in the cache under the global lock", diagnose.HumanNum(writes))})
	}
	f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "settings:query_cache_type",
		Text: "query_cache_type = " + diagnose.Setting(run, "query_cache_type", "?") + ", query_cache_size = " + diagnose.Setting(run, "query_cache_size", "?")})
	f.Headline = fmt.Sprintf("Query cache lock contention: %s sessions wait on the query cache's global lock on average (peak %s)",
		diagnose.HumanNum(waiting), diagnose.HumanNum(peak.V))
	if invalid.N > 0 && invalid.Mean > 0 {
		f.Headline += fmt.Sprintf(", while writes drop %s cached results/s", diagnose.HumanNum(invalid.Mean))
	}
	f.Mechanism = "The query cache is one structure behind one lock. Every SELECT takes it to look itself up and again to store its result; every INSERT, UPDATE or DELETE takes it to drop every cached result of the table it changed. " +
		"A table written many times a second (a member list taking joins) keeps invalidating the results read from it (its COUNT(*)), so the cache saves little and every statement of every session queues on the lock: \"" + mariadbmetric.StateQueryCacheLock + "\"."
	f.Remedy = "Turn the query cache off: query_cache_type = 0 and query_cache_size = 0 in my.cnf (with both at startup the server never takes its lock; SET GLOBAL query_cache_type = OFF stops caching at once but keeps the lock until a restart). " +
		"Serve hot aggregates another way: keep the count in a counter table updated in the write's transaction (split into a few slot rows if writes contend on it), or cache it in the application."
	if strings.TrimSpace(diagnose.Setting(run, "query_cache_type", "")) == "" {
		f.Remedy += " (This run did not record the query cache settings.)"
	}
	return []diagnose.Finding{f}
}
