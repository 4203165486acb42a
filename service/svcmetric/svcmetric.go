// Package svcmetric names the series of the service model (package
// service): the timeline source and its keys. A leaf: it imports nothing
// of firedrill, so that rules, reports and tests can read the series
// without the model.
package svcmetric

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

// Key is the series key of a service's metric, with a suffix (an
// instance's number, a target's name) or none.
func Key(service, metric, suffix string) string {
	k := service + "." + metric
	if suffix != "" {
		k += "." + suffix
	}
	return k
}
