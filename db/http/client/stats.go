package httptarget

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Stats are the counters of a target's requests, for all endpoints and
// per endpoint, cumulative since the target was made: the clients add to
// them with atomic adds (allocating nothing), and the sampler reads them
// each tick and reports the interval's difference. Endpoints are
// registered before the run (Target.Prepare).
type Stats struct {
	mu        sync.Mutex
	endpoints []*Endpoint
	index     map[string]int
	// All counts every request of the target.
	All Endpoint
}

// Endpoint is one endpoint's counters.
type Endpoint struct {
	Name    string
	Replies atomic.Int64
	// Status counts replies by class: [1] 1xx … [5] 5xx, [0] any other.
	Status [6]atomic.Int64
	// Errors counts requests that got no reply (timeout, lost, refused).
	Errors  atomic.Int64
	Latency Histogram
}

// register returns the index of the endpoint named name, adding it.
func (s *Stats) register(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[name]; ok {
		return i
	}
	if s.index == nil {
		s.index = make(map[string]int)
	}
	s.endpoints = append(s.endpoints, &Endpoint{Name: name})
	s.index[name] = len(s.endpoints) - 1
	return len(s.endpoints) - 1
}

// Endpoints lists the registered endpoints, in the order first seen.
func (s *Stats) Endpoints() []*Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Endpoint(nil), s.endpoints...)
}

// endpoint returns the endpoint of index id, nil for none. Endpoints
// are all registered before the run starts (Target.Prepare), so the
// clients read the list without the lock.
func (s *Stats) endpoint(id int) *Endpoint {
	if id < 0 || id >= len(s.endpoints) {
		return nil
	}
	return s.endpoints[id]
}

// Record records a reply of status after us microseconds.
func (e *Endpoint) Record(status int, us int64) {
	e.Replies.Add(1)
	class := status / 100
	if class < 1 || class > 5 {
		class = 0
	}
	e.Status[class].Add(1)
	e.Latency.Record(us)
}

// The request latency histogram: log-linear in microseconds, 32 buckets
// per power of two (percentiles within 3.2 %, as the engine's per-command
// histograms), cumulative and recorded with atomic adds.
const (
	histSubBits = 5
	histSub     = 1 << histSubBits
	histOctaves = 32 - histSubBits + 1 // up to 2^32 µs (71 minutes)
	histBuckets = histOctaves * histSub
)

// Histogram counts request latencies; Record may be called from any
// number of goroutines at once and never allocates.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	max    atomic.Int64
}

// Record adds one latency in microseconds.
func (h *Histogram) Record(us int64) {
	us = min(max(us, 0), 1<<32-1)
	h.counts[bucketOf(us)].Add(1)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			return
		}
	}
}

func bucketOf(us int64) int {
	if us < histSub {
		return int(us)
	}
	e := bits.Len64(uint64(us)) - 1
	return (e-histSubBits+1)*histSub + int(us>>(e-histSubBits)) - histSub
}

// bucketHigh is the highest latency of bucket b.
func bucketHigh(b int) int64 {
	o, sub := b/histSub, b%histSub
	if o == 0 {
		return int64(sub)
	}
	return int64(histSub+sub+1)<<(o-1) - 1
}

// Snapshot is a copy of a histogram's counts, to subtract from a later
// one.
type Snapshot struct {
	counts [histBuckets]uint64
	max    int64
}

// Snapshot copies the histogram's counts.
func (h *Histogram) Snapshot(into *Snapshot) {
	for i := range h.counts {
		into.counts[i] = h.counts[i].Load()
	}
	into.max = h.max.Load()
}

// Quantiles returns the q-quantiles (0 < q ≤ 1) in microseconds of the
// latencies recorded between prev and cur, and their count; an empty
// interval has none.
func Quantiles(prev, cur *Snapshot, qs []float64, out []float64) (n uint64) {
	for i := range cur.counts {
		n += cur.counts[i] - prev.counts[i]
	}
	if n == 0 {
		return 0
	}
	for qi, q := range qs {
		rank := uint64(q*float64(n) + 0.5)
		rank = max(rank, 1)
		var seen uint64
		for i := range cur.counts {
			seen += cur.counts[i] - prev.counts[i]
			if seen >= rank {
				out[qi] = float64(bucketHigh(i))
				break
			}
		}
	}
	return n
}

// MaxIn is the largest latency recorded between prev and cur, µs: the
// highest bucket that grew (the exact maximum when it is the run's).
func MaxIn(prev, cur *Snapshot) float64 {
	for i := len(cur.counts) - 1; i >= 0; i-- {
		if cur.counts[i] != prev.counts[i] {
			if cur.max > prev.max {
				return float64(cur.max)
			}
			return float64(bucketHigh(i))
		}
	}
	return 0
}

// Add adds o's counts to s (two workloads' requests to one endpoint,
// read together); the maximum is the larger.
func (s *Snapshot) Add(o *Snapshot) {
	for i := range s.counts {
		s.counts[i] += o.counts[i]
	}
	s.max = max(s.max, o.max)
}
