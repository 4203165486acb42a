package scenario

import (
	"fmt"
	"strings"

	"github.com/firedrill/firedrill/service/svcmetric"
	"github.com/firedrill/firedrill/timeline"
)

// servicePrefix names a service's metrics in thresholds:
// "<service>.service.<metric>".
const servicePrefix = "service"

// ServiceMetrics are the metrics of a service (scenario services:) a
// threshold may name as "<service>.service.<metric>", over the whole
// run, read from the service's series (the source "service"); the
// Measure's parameter is the service's name.
var ServiceMetrics = []MetricSpec{
	{Name: "goodput", Kind: Throughput, Doc: "responses within the callers' timeout per second", Measure: serviceMean(svcmetric.Goodput)},
	{Name: "throughput", Kind: Throughput, Doc: "responses per second, late ones included", Measure: serviceMean(svcmetric.Throughput)},
	{Name: "goodput_ratio", Kind: Ratio, Doc: "goodput / arrivals", Measure: serviceGoodputRatio},
	{Name: "timeouts", Kind: Count, Doc: "callers who gave up", Measure: serviceTotal(svcmetric.Timeouts, "")},
	{Name: "wasted", Kind: Count, Doc: "responses finished after their caller gave up", Measure: serviceTotal(svcmetric.Wasted, "")},
	{Name: "refused", Kind: Count, Doc: "requests refused, the accept queue full", Measure: serviceTotal(svcmetric.Refused, "")},
	{Name: "failed", Kind: Count, Doc: "responses with an error", Measure: serviceTotal(svcmetric.Failed, "")},
	{Name: "retries", Kind: Count, Doc: "retried attempts", Measure: serviceTotal(svcmetric.Retries, "")},
	{Name: "throttle_rejected", Kind: Count, Doc: "requests the throttle rejected", Measure: serviceTotal(svcmetric.ThrottleRejected, "")},
	{Name: "bulkhead_rejected", Kind: Count, Doc: "calls the bulkheads refused, over the targets", Measure: serviceTotal(svcmetric.BulkheadRejected, ".")},
	{Name: "breaker_rejected", Kind: Count, Doc: "calls the circuit breakers refused, over the targets", Measure: serviceTotal(svcmetric.BreakerRejected, ".")},
	{Name: "queue_length_max", Kind: Count, Doc: "most requests in the accept queues at a tick", Measure: serviceMax(svcmetric.QueueLength)},
	{Name: "queue_oldest_age_max", Kind: Latency, Doc: "oldest queued request's age at its worst", Measure: serviceMax(svcmetric.QueueOldestAge)},
	{Name: "response_time_mean", Kind: Latency, Doc: "mean time in the service", Measure: serviceResponseTime},
}

// serviceSeries is a service's series (or, with family ".", the sum of
// its per-target lines), as (time, value) points.
func serviceSeries(run *timeline.Run, service, metric, family string) []timeline.Point {
	if family == "" {
		return run.Series(svcmetric.Source, svcmetric.Key(service, metric, ""))
	}
	prefix := svcmetric.Key(service, metric, "") + family
	var out []timeline.Point
	for _, s := range run.SourceSamples(svcmetric.Source) {
		sum, any := 0.0, false
		for k, v := range s.Values {
			if strings.HasPrefix(k, prefix) {
				sum, any = sum+v, true
			}
		}
		if any {
			out = append(out, timeline.Point{T: s.T, V: sum})
		}
	}
	return out
}

// integrate sums a per-second series over its ticks.
func integrate(points []timeline.Point) (total, span float64) {
	for i := 1; i < len(points); i++ {
		dt := points[i].T - points[i-1].T
		total += points[i].V * dt
		span += dt
	}
	return total, span
}

func noSeries(service, metric string) string {
	return fmt.Sprintf("service %q recorded no %s series", service, metric)
}

func serviceTotal(metric, family string) Measure {
	return func(run *timeline.Run, service string) (float64, string, bool) {
		pts := serviceSeries(run, service, metric, family)
		if len(pts) < 2 {
			if family != "" && len(run.Series(svcmetric.Source, svcmetric.Key(service, svcmetric.Arrivals, ""))) > 1 {
				return 0, "", true // none of its targets has one: nothing refused
			}
			return 0, noSeries(service, metric), false
		}
		total, _ := integrate(pts)
		return total, "", true
	}
}

func serviceMean(metric string) Measure {
	return func(run *timeline.Run, service string) (float64, string, bool) {
		total, span := integrate(serviceSeries(run, service, metric, ""))
		if span <= 0 {
			return 0, noSeries(service, metric), false
		}
		return total / span, "", true
	}
}

func serviceMax(metric string) Measure {
	return func(run *timeline.Run, service string) (float64, string, bool) {
		pts := serviceSeries(run, service, metric, "")
		if len(pts) == 0 {
			return 0, noSeries(service, metric), false
		}
		m := pts[0].V
		for _, p := range pts[1:] {
			m = max(m, p.V)
		}
		return m, "", true
	}
}

func serviceGoodputRatio(run *timeline.Run, service string) (float64, string, bool) {
	good, _ := integrate(serviceSeries(run, service, svcmetric.Goodput, ""))
	arrived, _ := integrate(serviceSeries(run, service, svcmetric.Arrivals, ""))
	if arrived == 0 {
		return 0, fmt.Sprintf("no request arrived at service %q", service), false
	}
	return good / arrived, "", true
}

func serviceResponseTime(run *timeline.Run, service string) (float64, string, bool) {
	thr := serviceSeries(run, service, svcmetric.Throughput, "")
	rt := map[float64]float64{}
	for _, p := range serviceSeries(run, service, svcmetric.ResponseTime, "") {
		rt[p.T] = p.V
	}
	var n, sum float64
	for i := 1; i < len(thr); i++ {
		left := thr[i].V * (thr[i].T - thr[i-1].T)
		n += left
		sum += left * rt[thr[i].T]
	}
	if n == 0 {
		return 0, fmt.Sprintf("no request left service %q", service), false
	}
	return sum / n, "", true
}
