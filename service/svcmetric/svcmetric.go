// Package svcmetric names the series of the service model (package
// service): the timeline source and its keys. A leaf: it imports nothing
// of firedrill, so that rules, reports and tests can read the series
// without the model.
package svcmetric

import "strconv"

// Source is the timeline source the services' series are recorded under
// (with no target): keys are <service>.<metric>, per instance
// <service>.<metric>.<instance>, per target <service>.<metric>.<target>.
const Source = "service"

// The series' metric names (docs/services.md lists what each is).
const (
	Arrivals         = "arrivals"
	Throughput       = "throughput"
	Goodput          = "goodput"
	QueueLength      = "queue_length"
	QueueOldestAge   = "queue_oldest_age"
	BusyThreads      = "busy_threads"
	CPURunQueue      = "cpu_run_queue"
	PoolWaiters      = "pool_waiters"
	Refused          = "refused"
	Timeouts         = "timeouts"
	Wasted           = "wasted"
	Cancelled        = "cancelled"
	Failed           = "failed"
	Retries          = "retries"
	Amplification    = "amplification"
	BreakerState     = "breaker_state"
	BreakerRejected  = "breaker_rejected"
	BulkheadRejected = "bulkhead_rejected"
	ThrottleAdmitted = "throttle_admitted"
	ThrottleRejected = "throttle_rejected"
	ThrottleLag      = "throttle_lag"
	InSystem         = "in_system"
	ResponseTime     = "response_time"
)

// Key is the series key of a service's metric, with a suffix (a
// target's name) or none.
func Key(service, metric, suffix string) string {
	k := service + "." + metric
	if suffix != "" {
		k += "." + suffix
	}
	return k
}

// InstanceKey is the series key of a metric of one of a service's
// instances (numbered from 0): <service>.instance.<n>.<metric>.
func InstanceKey(service string, instance int, metric string) string {
	return service + ".instance." + strconv.Itoa(instance) + "." + metric
}

// Key patterns: a placeholder in <…> stands for a service's, an
// instance's or a target's name (they become labels on /metrics).
const (
	svc = "<service>."
	ins = "<service>.instance.<server>."
	tgt = ".<target>"
)

// KeySpec is one key pattern of the source, with its unit and meaning
// (the shape of the kinds' metric tables, for /metrics).
type KeySpec struct {
	Source, Key, Unit, Doc string
}

// Keys lists every key pattern of the source "service".
var Keys = []KeySpec{
	{Source, svc + Arrivals, "req/s", "requests arriving at the service"},
	{Source, svc + Throughput, "req/s", "requests leaving the service after it took them (late ones included)"},
	{Source, svc + Goodput, "req/s", "successful responses within the callers' timeout"},
	{Source, svc + QueueLength, "count", "requests in the accept queues"},
	{Source, ins + QueueLength, "count", "requests in an instance's accept queue"},
	{Source, svc + QueueOldestAge, "s", "age of the oldest queued request"},
	{Source, svc + BusyThreads, "count", "threads serving a request"},
	{Source, ins + BusyThreads, "count", "an instance's threads serving a request"},
	{Source, ins + CPURunQueue, "count", "requests waiting for an instance's CPU beyond its cores"},
	{Source, svc + PoolWaiters, "count", "threads waiting for a pooled connection"},
	{Source, ins + PoolWaiters, "count", "an instance's threads waiting for a pooled connection"},
	{Source, svc + Refused, "req/s", "requests refused, the accept queue full"},
	{Source, svc + Timeouts, "req/s", "callers who gave up (the timeout)"},
	{Source, svc + Wasted, "req/s", "responses finished after their caller gave up"},
	{Source, svc + Cancelled, "req/s", "requests dropped after their caller gave up (cancel_on_timeout)"},
	{Source, svc + Failed, "req/s", "responses with an error"},
	{Source, svc + Retries, "req/s", "retried attempts"},
	{Source, svc + Amplification, "count", "attempts on the database per request that left"},
	{Source, svc + BreakerState + tgt, "count", "a target's circuit breaker: 0 closed, 1 open, 2 half-open"},
	{Source, svc + BreakerRejected + tgt, "req/s", "calls a target's circuit breaker refused"},
	{Source, svc + BulkheadRejected + tgt, "req/s", "calls a target's bulkhead refused"},
	{Source, svc + ThrottleAdmitted, "req/s", "requests the throttle admitted"},
	{Source, svc + ThrottleRejected, "req/s", "requests the throttle rejected"},
	{Source, svc + ThrottleLag, "s", "how late the throttle sees admissions (0 for a local one)"},
	{Source, svc + InSystem, "count", "mean requests in the service over the tick (Little's L)"},
	{Source, svc + ResponseTime, "s", "mean time in the service of the requests that left in the tick (Little's W)"},
}
