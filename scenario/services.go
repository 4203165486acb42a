package scenario

import (
	"fmt"
	"math"
	"time"

	"gopkg.in/yaml.v3"
)

// Service is a model of the application tier a workload's requests pass
// through on their way to the database (docs/services.md): instances of
// a thread pool with an accept queue, the callers' timeout, CPU, a
// connection pool, retries, a circuit breaker, a bulkhead and a
// throttle. The zero values of the optional parts mean "none"; Load
// fills the defaults of the parts given.
type Service struct {
	Pos  Pos
	Name string
	// Instances are the servers behind the balancer (default 1); each
	// has MaxThreads threads (Tomcat's maxThreads, default 200) and an
	// accept queue of AcceptCount (acceptCount, default 100).
	Instances   int
	MaxThreads  int
	AcceptCount int
	LIFO        bool // the queue hands out the newest request first (default: FIFO)
	// Timeout is when a caller gives up (0: never); CancelOnTimeout
	// makes the server drop such a request instead of finishing it.
	Timeout         time.Duration
	CancelOnTimeout bool
	// Cores and CPUPerRequest model each instance's CPU (both 0: none).
	Cores         float64
	CPUPerRequest time.Duration
	Pool          ServicePool
	Retry         *ServiceRetry
	Breaker       *ServiceBreaker
	Bulkhead      *ServiceBulkhead
	Throttle      *ServiceThrottle
}

// ServicePool is HikariCP's pool, per instance and target.
type ServicePool struct {
	Size              int           // maximumPoolSize (default 10)
	ConnectionTimeout time.Duration // connectionTimeout (default 30 s)
}

// ServiceRetry is Resilience4j's Retry with exponential backoff and a
// budget.
type ServiceRetry struct {
	MaxAttempts int           // the first call included (default 3)
	Wait        time.Duration // before the first retry (default 500 ms)
	Multiplier  float64       // of the wait per retry (default 1)
	Budget      float64       // retries at most this fraction of the last 10 s's calls; 0 = no budget
}

// ServiceBreaker is Resilience4j's CircuitBreaker (count-based window),
// one per target.
type ServiceBreaker struct {
	FailureRateThreshold     float64       // % (default 50)
	SlowCallRateThreshold    float64       // % (default 100)
	SlowCallDuration         time.Duration // default 60 s
	SlidingWindowSize        int           // default 100
	MinimumNumberOfCalls     int           // default 100
	WaitInOpen               time.Duration // default 60 s
	PermittedCallsInHalfOpen int           // default 10
}

// ServiceBulkhead is Resilience4j's semaphore Bulkhead, per target and
// instance.
type ServiceBulkhead struct {
	MaxConcurrentCalls int           // default 25
	MaxWait            time.Duration // default 0: full → rejected at once
}

// ServiceThrottle is a token bucket in front of the service's queues.
type ServiceThrottle struct {
	Rate   float64       // admitted per second
	Burst  float64       // the bucket (default: Rate)
	Remote bool          // the limiter learns of admissions Lag late
	Lag    time.Duration // remote only
}

// Service defaults, as Tomcat, HikariCP and Resilience4j have them.
const (
	DefaultMaxThreads   = 200
	DefaultAcceptCount  = 100
	DefaultServicePool  = 10
	MaxServiceInstances = 1000
	MaxServiceThreads   = 100_000
)

// ServiceByName returns the scenario's service of that name.
func (s *Scenario) ServiceByName(name string) (*Service, bool) {
	for i := range s.Services {
		if s.Services[i].Name == name {
			return &s.Services[i], true
		}
	}
	return nil, false
}

func (l *loader) services(v *yaml.Node) {
	names := map[string]Pos{}
	for _, item := range l.list(v, "services", false) {
		if sv, ok := l.service(item, names); ok {
			l.s.Services = append(l.s.Services, sv)
		}
	}
}

func (l *loader) service(v *yaml.Node, names map[string]Pos) (Service, bool) {
	sv := Service{Pos: pos(v), Instances: 1, MaxThreads: DefaultMaxThreads, AcceptCount: DefaultAcceptCount,
		Pool: ServicePool{Size: DefaultServicePool, ConnectionTimeout: 30 * time.Second}}
	intIn := func(dst *int, key string, lo, hi int64) func(*yaml.Node) {
		return func(n *yaml.Node) {
			if x, ok := l.integer(n, key, lo, hi); ok {
				*dst = int(x)
			}
		}
	}
	present := l.fields(v, "service", []field{
		{"name", func(n *yaml.Node) {
			name, ok := l.name(n, "name", "_-")
			if !ok {
				return
			}
			if first, dup := names[name]; dup {
				l.errorf(n, "duplicate service name %q (first at line %d)", name, first.Line)
				return
			}
			names[name] = pos(n)
			sv.Name = name
		}},
		{"instances", intIn(&sv.Instances, "instances", 1, MaxServiceInstances)},
		{"max_threads", intIn(&sv.MaxThreads, "max_threads", 1, MaxServiceThreads)},
		{"accept_count", intIn(&sv.AcceptCount, "accept_count", 0, MaxServiceThreads)},
		{"queue", func(n *yaml.Node) {
			if q, ok := l.oneOf(n, "queue", []string{"fifo", "lifo"}); ok {
				sv.LIFO = q == "lifo"
			}
		}},
		{"timeout", func(n *yaml.Node) { sv.Timeout, _ = l.positiveDuration(n, "timeout") }},
		{"cancel_on_timeout", func(n *yaml.Node) { sv.CancelOnTimeout, _ = l.boolean(n, "cancel_on_timeout") }},
		{"cores", func(n *yaml.Node) { sv.Cores, _ = l.positiveNumber(n, "cores") }},
		{"cpu_per_request", func(n *yaml.Node) { sv.CPUPerRequest, _ = l.positiveDuration(n, "cpu_per_request") }},
		{"pool", func(n *yaml.Node) {
			l.fields(n, "service pool", []field{
				{"size", intIn(&sv.Pool.Size, "size", 1, MaxClientsPerWorkload)},
				{"connection_timeout", func(n *yaml.Node) { sv.Pool.ConnectionTimeout, _ = l.positiveDuration(n, "connection_timeout") }},
			})
		}},
		{"retry", func(n *yaml.Node) {
			r := &ServiceRetry{MaxAttempts: 3, Wait: 500 * time.Millisecond, Multiplier: 1}
			if l.fields(n, "retry", []field{
				{"max_attempts", intIn(&r.MaxAttempts, "max_attempts", 1, 100)},
				{"wait", func(n *yaml.Node) { r.Wait, _ = l.nonNegativeDuration(n, "wait") }},
				{"multiplier", func(n *yaml.Node) {
					if x, ok := l.number(n, "multiplier"); ok {
						if x < 1 {
							l.errorf(n, "multiplier: %v is below 1 (1 waits the same before each retry)", x)
							return
						}
						r.Multiplier = x
					}
				}},
				{"budget", func(n *yaml.Node) {
					if x, ok := l.number(n, "budget"); ok {
						if x <= 0 || x > 1 {
							l.hintf(n, "a fraction of the calls, as in budget: 0.2", "budget: %v is not in (0, 1]", x)
							return
						}
						r.Budget = x
					}
				}},
			}) != nil {
				sv.Retry = r
			}
		}},
		{"breaker", func(n *yaml.Node) {
			b := &ServiceBreaker{FailureRateThreshold: 50, SlowCallRateThreshold: 100, SlowCallDuration: time.Minute,
				SlidingWindowSize: 100, MinimumNumberOfCalls: 100, WaitInOpen: time.Minute, PermittedCallsInHalfOpen: 10}
			if l.fields(n, "breaker", []field{
				{"failure_rate_threshold", func(n *yaml.Node) { b.FailureRateThreshold, _ = l.percent(n, "failure_rate_threshold") }},
				{"slow_call_rate_threshold", func(n *yaml.Node) { b.SlowCallRateThreshold, _ = l.percent(n, "slow_call_rate_threshold") }},
				{"slow_call_duration", func(n *yaml.Node) { b.SlowCallDuration, _ = l.positiveDuration(n, "slow_call_duration") }},
				{"sliding_window_size", intIn(&b.SlidingWindowSize, "sliding_window_size", 1, 1_000_000)},
				{"minimum_number_of_calls", intIn(&b.MinimumNumberOfCalls, "minimum_number_of_calls", 1, 1_000_000)},
				{"wait_in_open", func(n *yaml.Node) { b.WaitInOpen, _ = l.positiveDuration(n, "wait_in_open") }},
				{"permitted_calls_in_half_open", intIn(&b.PermittedCallsInHalfOpen, "permitted_calls_in_half_open", 1, 1_000_000)},
			}) != nil {
				sv.Breaker = b
			}
		}},
		{"bulkhead", func(n *yaml.Node) {
			b := &ServiceBulkhead{MaxConcurrentCalls: 25}
			if l.fields(n, "bulkhead", []field{
				{"max_concurrent_calls", intIn(&b.MaxConcurrentCalls, "max_concurrent_calls", 1, MaxServiceThreads)},
				{"max_wait", func(n *yaml.Node) { b.MaxWait, _ = l.nonNegativeDuration(n, "max_wait") }},
			}) != nil {
				sv.Bulkhead = b
			}
		}},
		{"throttle", func(n *yaml.Node) {
			t := &ServiceThrottle{}
			var lagNode *yaml.Node
			p := l.fields(n, "throttle", []field{
				{"rate", func(n *yaml.Node) { t.Rate, _ = l.positiveNumber(n, "rate") }},
				{"burst", func(n *yaml.Node) { t.Burst, _ = l.positiveNumber(n, "burst") }},
				{"mode", func(n *yaml.Node) {
					if m, ok := l.oneOf(n, "mode", []string{"local", "remote"}); ok {
						t.Remote = m == "remote"
					}
				}},
				{"lag", func(n *yaml.Node) { lagNode = n; t.Lag, _ = l.positiveDuration(n, "lag") }},
			})
			if p == nil {
				return
			}
			l.require(n, p, "rate", "throttle", "as in rate: 200 (requests admitted per second)")
			if t.Burst == 0 {
				t.Burst = max(t.Rate, 1)
			}
			if lagNode != nil && !t.Remote {
				l.hintf(lagNode, "set mode: remote, or remove lag", "throttle: lag applies only with mode: remote")
			}
			if t.Remote && lagNode == nil {
				l.hintf(n, "as in lag: 5s", "throttle: mode: remote needs lag")
			}
			sv.Throttle = t
		}},
	})
	if present == nil {
		return sv, false
	}
	what := "service"
	if sv.Name != "" {
		what = fmt.Sprintf("service %q", sv.Name)
	}
	l.require(v, present, "name", what, "as in name: api")
	if set(present, "cores") != set(present, "cpu_per_request") {
		key := "cores"
		if set(present, "cpu_per_request") {
			key = "cpu_per_request"
		}
		l.hintf(present[key].key, "give both cores and cpu_per_request, or neither", "%s: %s needs the other of cores and cpu_per_request", what, key)
	}
	if set(present, "cancel_on_timeout") && !set(present, "timeout") {
		l.hintf(present["cancel_on_timeout"].key, "set timeout, or remove cancel_on_timeout", "%s: cancel_on_timeout applies only with timeout", what)
	}
	return sv, true
}

// positiveNumber decodes a number above 0.
func (l *loader) positiveNumber(v *yaml.Node, key string) (float64, bool) {
	x, ok := l.number(v, key)
	if !ok {
		return 0, false
	}
	if x <= 0 || math.IsInf(x, 0) {
		l.errorf(v, "%s: %v must be above 0", key, x)
		return 0, false
	}
	return x, true
}

// percent decodes a percentage in (0, 100].
func (l *loader) percent(v *yaml.Node, key string) (float64, bool) {
	x, ok := l.number(v, key)
	if !ok {
		return 0, false
	}
	if x <= 0 || x > 100 {
		l.hintf(v, "a percentage, as in "+key+": 50", "%s: %v is not in (0, 100]", key, x)
		return 0, false
	}
	return x, true
}

// nonNegativeDuration decodes a duration of 0 or more.
func (l *loader) nonNegativeDuration(v *yaml.Node, key string) (time.Duration, bool) {
	d, ok := l.duration(v, key)
	if ok && d < 0 {
		l.errorf(v, "%s: %v is negative", key, d)
		return 0, false
	}
	return d, ok
}

// workloadService checks a workload's service: it exists, and the
// workload has no pool of its own beside it.
func (l *loader) workloadService(w *Workload, what string, present map[string]entry) {
	if !set(present, "service") || w.Service == "" {
		return
	}
	at := present["service"].val
	if _, ok := l.s.ServiceByName(w.Service); !ok {
		var names []string
		for _, sv := range l.s.Services {
			names = append(names, sv.Name)
		}
		mean, _ := suggest(w.Service, names)
		l.hintf(at, "name one of the scenario's services:", "%s: service: no service %s%s", what, quoteShort(w.Service), mean)
	}
	if set(present, "pool") {
		l.hintf(present["pool"].key, "set the pool on the service (services: [{pool: {size: …}}])",
			"%s: pool and service are both given", what)
	}
	if w.Fallback != nil {
		l.hintf(at, "remove one of service and fallback", "%s: a workload with a fallback cannot go through a service", what)
	}
}
