// Package svcpresent is how the report draws a service's series (the
// source "service"): its charts, declared as series of its keys, as a
// kind declares its own.
package svcpresent

import (
	"sort"
	"strings"

	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/service/svcmetric"
)

// Names are the services a run's keys of the source "service" speak of,
// sorted.
func Names(keys []string) []string {
	seen := map[string]bool{}
	for _, k := range keys {
		if name, ok := strings.CutSuffix(k, "."+svcmetric.InSystem); ok {
			seen[name] = true
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Charts are one service's charts: its requests' fates, its queue and
// threads, its instances, and its breaker, bulkhead and throttle.
func Charts(name string) []present.Chart {
	src := svcmetric.Source
	key := func(m string) string { return svcmetric.Key(name, m, "") }
	fam := func(m string) string { return svcmetric.Key(name, m, "") + "." }
	id := "service-" + name + "-"
	rate := present.Axis{Label: "requests/s", Unit: "rate", Text: "req/s", Min: present.Zero()}
	count := present.Axis{Label: "requests", Unit: "count", Text: "requests", Min: present.Zero()}
	secs := present.Axis{Label: "seconds", Unit: "s", Min: present.Zero()}
	return []present.Chart{
		{
			ID: id + "requests", Title: name + ": requests, goodput and wasted work", What: "request counts",
			Help: "Requests arriving and leaving the service each second: throughput counts every response (late ones included), " +
				"goodput those that came back before the caller's timeout; wasted work is responses finished after their caller gave up.",
			Axes: []present.Axis{rate},
			Series: []present.Series{
				{Source: src, Key: key(svcmetric.Arrivals), Label: "arrivals", Style: "dot"},
				{Source: src, Key: key(svcmetric.Throughput), Label: "throughput"},
				{Source: src, Key: key(svcmetric.Goodput), Label: "goodput", Width: 2},
				{Source: src, Key: key(svcmetric.Timeouts), Label: "timeouts", SkipIfZero: true},
				{Source: src, Key: key(svcmetric.Wasted), Label: "wasted", SkipIfZero: true},
				{Source: src, Key: key(svcmetric.Cancelled), Label: "cancelled", SkipIfZero: true},
				{Source: src, Key: key(svcmetric.Refused), Label: "refused (queue full)", SkipIfZero: true},
				{Source: src, Key: key(svcmetric.Failed), Label: "failed", SkipIfZero: true},
				{Source: src, Key: key(svcmetric.Retries), Label: "retries", SkipIfZero: true, Style: "dash"},
			},
		},
		{
			ID: id + "queue", Title: name + ": queue, threads and pool waiters", What: "queue levels",
			Help: "Requests waiting in the accept queues, threads serving one, threads waiting for a pooled connection (left); " +
				"the age of the oldest queued request (right).",
			Axes: []present.Axis{count, secs},
			Series: []present.Series{
				{Source: src, Key: key(svcmetric.QueueLength), Label: "queued"},
				{Source: src, Key: key(svcmetric.BusyThreads), Label: "busy threads"},
				{Source: src, Key: key(svcmetric.PoolWaiters), Label: "pool waiters", SkipIfZero: true},
				{Source: src, Key: key(svcmetric.QueueOldestAge), Label: "oldest queued (s)", Axis: 1, Style: "dash"},
			},
		},
		{
			ID: id + "instances", Title: name + ": per instance", What: "per-instance levels",
			Help: "Each instance's busy threads, and the requests waiting for its CPU beyond its cores (the CPU run queue).",
			Axes: []present.Axis{count},
			Series: []present.Series{
				{Source: src, Prefix: name + ".instance.", Suffix: "." + svcmetric.BusyThreads, Label: "busy threads", ByName: true},
				{Source: src, Prefix: name + ".instance.", Suffix: "." + svcmetric.CPURunQueue, Label: "CPU run queue", ByName: true, SkipIfZero: true, Style: "dash"},
			},
		},
		{
			ID: id + "guards", Title: name + ": breaker, bulkhead and throttle", What: "breaker, bulkhead or throttle series",
			Help: "Calls the circuit breaker and the bulkhead of each target refused, requests the throttle admitted and rejected (left); " +
				"each breaker's state, 0 closed, 1 open, 2 half-open, and the throttle's lag in seconds (right).",
			Axes: []present.Axis{rate, {Label: "state / lag (s)", Unit: "count", Text: "state, s", Min: present.Zero()}},
			Series: []present.Series{
				{Source: src, Prefix: fam(svcmetric.BreakerRejected), Label: "breaker refused", SkipIfZero: true},
				{Source: src, Prefix: fam(svcmetric.BulkheadRejected), Label: "bulkhead refused", SkipIfZero: true},
				{Source: src, Key: key(svcmetric.ThrottleAdmitted), Label: "throttle admitted"},
				{Source: src, Key: key(svcmetric.ThrottleRejected), Label: "throttle rejected", SkipIfZero: true},
				{Source: src, Prefix: fam(svcmetric.BreakerState), Label: "breaker state", Axis: 1, Style: "dash", ByName: true},
				{Source: src, Key: key(svcmetric.ThrottleLag), Label: "throttle lag (s)", Axis: 1, Style: "dot"},
			},
		},
	}
}

// Counters are one service's series compare sets side by side: its
// goodput beside its throughput, what it wasted and refused, its worst
// queue.
func Counters(name string) []present.Counter {
	src := svcmetric.Source
	key := func(m string) string { return svcmetric.Key(name, m, "") }
	label := func(what string) string { return name + ": " + what }
	return []present.Counter{
		{Source: src, Key: key(svcmetric.Goodput), Label: label("goodput"), Unit: "req/s", Agg: present.Mean},
		{Source: src, Key: key(svcmetric.Throughput), Label: label("throughput"), Unit: "req/s", Agg: present.Mean},
		{Source: src, Key: key(svcmetric.Timeouts), Label: label("timeouts"), Unit: "req/s", Agg: present.Mean},
		{Source: src, Key: key(svcmetric.Wasted), Label: label("wasted work"), Unit: "req/s", Agg: present.Mean},
		{Source: src, Key: key(svcmetric.Refused), Label: label("refused"), Unit: "req/s", Agg: present.Mean},
		{Source: src, Key: key(svcmetric.QueueOldestAge), Label: label("oldest queued, worst"), Unit: "s", Agg: present.Max},
		{Source: src, Key: key(svcmetric.ResponseTime), Label: label("time in service, worst tick"), Unit: "s", Agg: present.Max},
	}
}
