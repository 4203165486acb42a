package httpsampler

import (
	"context"
	"testing"
	"time"

	httptarget "github.com/firedrill/firedrill/db/http/client"
	"github.com/firedrill/firedrill/db/http/httpdialect"
	hm "github.com/firedrill/firedrill/db/http/httpmetric"
	"github.com/firedrill/firedrill/script"
)

// The sampler reports each interval's replies per second by class and
// its latency percentiles, for all requests and per endpoint.
func TestRequestsInterval(t *testing.T) {
	t.Parallel()
	tgt, err := httptarget.NewTarget(httptarget.Config{URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := script.ParseDialect("s", []byte("GET /a/:id\nPOST /b\n"), script.NewSymbols(), httpdialect.Script())
	if err != nil {
		t.Fatal(err)
	}
	tgt.Prepare([]*script.Script{s})
	st := tgt.Stats()
	eps := st.Endpoints()
	r := New(st)
	at := time.Unix(1000, 0)
	r.now = func() time.Time { return at }
	if v, _, _ := r.Sample(context.Background()); len(v) != 0 {
		t.Fatalf("first read %v: it only takes the starting point", v)
	}
	for i := range 100 {
		eps[0].Record(200, int64(1000+i)) // 1 ms … 1.1 ms
		st.All.Record(200, int64(1000+i))
	}
	eps[1].Record(503, 50_000)
	st.All.Record(503, 50_000)
	eps[1].Errors.Add(2)
	at = at.Add(2 * time.Second)
	v, _, err := r.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check := func(key string, want, tol float64) {
		t.Helper()
		if got, ok := v[key]; !ok || got < want-tol || got > want+tol {
			t.Errorf("%s = %v (present %v), want %v ± %v", key, got, ok, want, tol)
		}
	}
	check(hm.RequestsPerS, 50.5, 0)
	check(hm.Status5xx, 0.5, 0)
	check("GET /a/:id"+hm.P99MSSuffix, 1.1, 0.04)
	check("GET /a/:id"+hm.Status2xxSuffix, 50, 0)
	check("POST /b"+hm.ErrorsPerSSuffix, 1, 0)
	check("POST /b"+hm.MaxMSSuffix, 50, 0)
	at = at.Add(time.Second)
	v, _, _ = r.Sample(context.Background())
	if v[hm.RequestsPerS] != 0 || v["GET /a/:id"+hm.P99MSSuffix] != 0 {
		t.Errorf("an empty interval: %v", v)
	}
}

// Two workloads' counters (each workload has its own) add up by
// endpoint: the target's series are every workload's requests.
func TestRequestsAddsWorkloads(t *testing.T) {
	t.Parallel()
	var stats []*httptarget.Stats
	for range 2 {
		tgt, err := httptarget.NewTarget(httptarget.Config{URL: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		s, err := script.ParseDialect("s", []byte("GET /a/:id\n"), script.NewSymbols(), httpdialect.Script())
		if err != nil {
			t.Fatal(err)
		}
		tgt.Prepare([]*script.Script{s})
		stats = append(stats, tgt.Stats())
	}
	r := NewSet(func() []*httptarget.Stats { return stats })
	at := time.Unix(1000, 0)
	r.now = func() time.Time { return at }
	r.Sample(context.Background())
	for i, st := range stats {
		ep := st.Endpoints()[0]
		for range 10 * (i + 1) {
			ep.Record(200, int64(1000*(i+1))) // 1 ms for the first, 2 ms for the second
			st.All.Record(200, int64(1000*(i+1)))
		}
	}
	at = at.Add(time.Second)
	v, _, _ := r.Sample(context.Background())
	if v[hm.RequestsPerS] != 30 || v["GET /a/:id"+hm.RequestsPerSSuffix] != 30 {
		t.Errorf("%v replies/s, endpoint %v: want 30 (10 + 20)", v[hm.RequestsPerS], v["GET /a/:id"+hm.RequestsPerSSuffix])
	}
	if p50, mx := v["GET /a/:id"+hm.P50MSSuffix], v["GET /a/:id"+hm.MaxMSSuffix]; p50 < 1.9 || p50 > 2.1 || mx != 2 {
		t.Errorf("p50 %v ms, max %v ms: want the 20 requests of 2 ms to be the median and the max", p50, mx)
	}
	at = at.Add(time.Second)
	v, _, _ = r.Sample(context.Background())
	if v[hm.RequestsPerS] != 0 {
		t.Errorf("an empty interval after two: %v", v)
	}
}
