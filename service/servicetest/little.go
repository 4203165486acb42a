// Package servicetest holds the checks every test of a run through a
// service makes on its series.
package servicetest

import (
	"math"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// CheckLittle checks Little's law on a run's samples of the source
// "service", for every service in them: over the run, the time-average
// number of requests in the service (in_system) equals its throughput
// times the mean time in it (response_time), within 2 %. The run starts
// and ends with the service empty (the last sample is taken after the
// load stopped), so the law holds for any load, overloaded or not: each
// tick's series are weighted by its length.
func CheckLittle(t testing.TB, samples []timeline.Sample) {
	t.Helper()
	var svc []timeline.Sample
	for _, s := range samples {
		if s.Source == svcmetric.Source {
			svc = append(svc, s)
		}
	}
	if len(svc) < 3 {
		t.Fatalf("Little's law: %d samples of the services, want at least 3", len(svc))
	}
	suffix := "." + svcmetric.InSystem
	services := map[string]bool{}
	for k := range svc[len(svc)-1].Values {
		if name, ok := strings.CutSuffix(k, suffix); ok {
			services[name] = true
		}
	}
	if len(services) == 0 {
		t.Fatal("Little's law: no in_system series")
	}
	span := svc[len(svc)-1].T - svc[0].T
	for name := range services {
		var l, lw float64
		for i := 1; i < len(svc); i++ {
			dt := svc[i].T - svc[i-1].T
			v := svc[i].Values
			l += v[svcmetric.Key(name, svcmetric.InSystem, "")] * dt
			lw += v[svcmetric.Key(name, svcmetric.Throughput, "")] * v[svcmetric.Key(name, svcmetric.ResponseTime, "")] * dt
		}
		if l == 0 {
			t.Errorf("Little's law, service %s: nobody in the service", name)
			continue
		}
		if r := lw / l; math.Abs(r-1) > 0.02 {
			t.Errorf("Little's law, service %s: throughput × mean time = %.4f, mean in the service %.4f (ratio %.4f, want within 2%%)",
				name, lw/span, l/span, r)
		} else {
			t.Logf("Little's law, service %s: L = %.4f, λW = %.4f", name, l/span, lw/span)
		}
	}
}
