package servicerules

import (
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/service/svcmetric"
)

// FuzzScenarioConfigs feeds the rules any scenario.yaml beside a run
// with every series: reading the services' setup must never fail a
// rule, whatever the file says (a rule has less to say, not an error).
func FuzzScenarioConfigs(f *testing.F) {
	f.Add(fifoService)
	f.Add("services:\n  - {name: api, instances: 0, max_threads: -1, timeout: 1h, throttle: {rate: 0, mode: remote, lag: x}}\nworkloads:\n  - {name: pages, service: api}\n")
	f.Add("services: 3\n")
	f.Add("services:\n  - name: api\n    bulkhead: {}\n    breaker: {}\n    retry: {budget: 2}\n")
	f.Fuzz(func(t *testing.T, scenarioYAML string) {
		run := shapedRunNoParse(t, scenarioYAML, 12, func(i int) map[string]float64 {
			v := map[string]float64{}
			for _, m := range []string{svcmetric.Arrivals, svcmetric.Throughput, svcmetric.Goodput, svcmetric.Wasted, svcmetric.Timeouts,
				svcmetric.QueueLength, svcmetric.QueueOldestAge, svcmetric.BusyThreads, svcmetric.PoolWaiters, svcmetric.Retries,
				svcmetric.Amplification, svcmetric.Failed, svcmetric.ThrottleAdmitted, svcmetric.ThrottleLag} {
				v[m] = float64(i % 5)
			}
			v[svcmetric.BreakerState+".db"] = float64(i % 3)
			v["instance.0."+svcmetric.CPURunQueue] = float64(i)
			return v
		})
		for _, f := range diagnose.Diagnose(run, Rules()) {
			if f.Headline == "" {
				t.Errorf("%s: a finding without a headline", f.Rule)
			}
		}
	})
}
