package runner

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

func TestParseShard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, err string
		want    Shard
	}{
		{in: "0/4", want: Shard{0, 4}},
		{in: "3/4", want: Shard{3, 4}},
		{in: " 0/1 ", want: Shard{0, 1}},
		{in: "4/4", err: "the index must be from 0 to 3"}, // 0-based: 4/4 is one past the last
		{in: "-1/4", err: "the index must be from 0 to 3"},
		{in: "x", err: "give it as i/N"},
		{in: "x/4", err: `the index "x" is not a number`},
		{in: "1/y", err: `the number of shards "y" is not a number`},
		{in: "0/0", err: "at least 1"},
		{in: "", err: "give it as i/N"},
	} {
		got, err := ParseShard(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("ParseShard(%q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseShard(%q): error %v, want one saying %q", tc.in, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("ParseShard(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// Every value splits exactly: the shares add up to it, differ by at most
// one, and as the value grows by one exactly one shard gains one (so a
// ramp of clients is shared exactly at every moment).
func TestScaleIntSplitsExactly(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 3, 4, 7, 16} {
		prev := make([]int, n)
		for v := 0; v <= 100; v++ {
			sum, lo, hi, gained := 0, math.MaxInt, 0, 0
			for i := range n {
				c := Shard{i, n}.ScaleInt(v)
				sum += c
				lo, hi = min(lo, c), max(hi, c)
				if c != prev[i] {
					gained += c - prev[i]
				}
				prev[i] = c
			}
			if sum != v || hi-lo > 1 {
				t.Fatalf("%d over %d shards: sum %d, shares from %d to %d", v, n, sum, lo, hi)
			}
			if v > 0 && gained != 1 {
				t.Fatalf("%d over %d shards: going from %d gave %d shards one more", v, n, v-1, gained)
			}
		}
	}
}

// A shard's share of a workload: clients split exactly, the rate per
// client kept (so a shard with no client gets no rate), stages scaled at
// every moment.
func TestShareShape(t *testing.T) {
	t.Parallel()
	ten, twenty := 10, 20
	rate := 300.0
	for _, tc := range []struct {
		name string
		w    scenario.Workload
	}{
		{"closed", scenario.Workload{Clients: 10}},
		{"rate over few clients", scenario.Workload{Clients: 3, Rate: 90}},
		{"rate with default clients", scenario.Workload{Rate: 1000}},
		{"clients ramp", scenario.Workload{Clients: 2, Stages: []scenario.Stage{{Duration: 10 * time.Second, Clients: &twenty}, {Duration: 5 * time.Second, Clients: &ten}}}},
		{"rate ramp", scenario.Workload{Clients: 6, Rate: 60, Stages: []scenario.Stage{{Duration: 10 * time.Second, Rate: &rate}}}},
	} {
		fn, clients, rateModel, maxRate := shape(&tc.w)
		for _, n := range []int{1, 4, 5} {
			sumClients, sumRate := 0, 0.0
			var shares []func(time.Duration) (int, float64)
			for i := range n {
				f, c, r, runs := Shard{i, n}.shareShape(fn, clients, rateModel, maxRate)
				if runs != (c > 0) || (!runs && r != 0) {
					t.Errorf("%s, shard %d/%d: runs %v with %d clients at %v/s", tc.name, i, n, runs, c, r)
				}
				sumClients += c
				sumRate += r
				if runs && f != nil {
					shares = append(shares, f)
				}
			}
			if sumClients != clients || math.Abs(sumRate-maxRate) > 1e-9 {
				t.Errorf("%s over %d shards: %d clients at %v/s, want %d at %v/s", tc.name, n, sumClients, sumRate, clients, maxRate)
			}
			if fn == nil {
				continue
			}
			for el := time.Duration(0); el <= 16*time.Second; el += 700 * time.Millisecond {
				wc, wr := fn(el)
				gc, gr := 0, 0.0
				for _, f := range shares {
					c, r := f(el)
					gc += c
					gr += r
				}
				if rateModel {
					wc = clients // under a rate every client may take a slot
				}
				if gc != wc || math.Abs(gr-wr) > 1e-9 {
					t.Errorf("%s over %d shards at %v: %d clients at %v/s, want %d at %v/s", tc.name, n, el, gc, gr, wc, wr)
				}
			}
		}
	}
}

// A pool splits as clients do, never into "no pool".
func TestSharePool(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ pool, n, want int }{
		{pool: 0, n: 4, want: 0},   // no pool stays none
		{pool: 8, n: 4, want: 8},   // 2 each
		{pool: 10, n: 4, want: 10}, // 2, 3, 2, 3
		{pool: 2, n: 4, want: 4},   // 0, 1, 0, 1 would be "no pool": 1 each
	} {
		sum := 0
		for i := range tc.n {
			p := Shard{i, tc.n}.sharePool(tc.pool)
			if tc.pool > 0 && p < 1 {
				t.Errorf("pool %d, shard %d/%d: %d", tc.pool, i, tc.n, p)
			}
			sum += p
		}
		if sum != tc.want {
			t.Errorf("pool %d over %d shards: %d connections, want %d", tc.pool, tc.n, sum, tc.want)
		}
	}
}

// Shards draw different random streams from one run seed; a whole run
// keeps its seed.
func TestShardSeed(t *testing.T) {
	t.Parallel()
	if got := (Shard{}).shardSeed(42); got != 42 {
		t.Errorf("a whole run's seed became %d", got)
	}
	seen := map[uint64]bool{}
	for i := range 8 {
		s := Shard{i, 8}.shardSeed(42)
		if seen[s] {
			t.Errorf("shard %d/8 repeats a seed", i)
		}
		seen[s] = true
		if s != (Shard{i, 8}).shardSeed(42) {
			t.Errorf("shard %d/8's seed is not a function of the run's", i)
		}
	}
}

func TestCheckShard(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	given := &scenario.Scenario{Target: scenario.Target{DSN: "postgres://127.0.0.1/x"}}
	embedded := &scenario.Scenario{}
	several := &scenario.Scenario{Targets: []scenario.NamedTarget{
		{Name: "db", Target: scenario.Target{DSN: "postgres://127.0.0.1/x"}},
		{Name: "cache", Target: scenario.Target{DSN: "redis://127.0.0.1:6379/0"}}}}
	someEmbedded := &scenario.Scenario{Targets: []scenario.NamedTarget{several.Targets[0], {Name: "cache"}}}
	for _, tc := range []struct {
		name string
		opts Options
		err  string
	}{
		{"whole run", Options{Scenario: embedded}, ""},
		{"shard with start and server", Options{Scenario: given, Shard: Shard{1, 4}, StartAt: now.Add(time.Minute)}, ""},
		{"just late", Options{Scenario: given, Shard: Shard{1, 4}, StartAt: now.Add(-time.Second)}, ""},
		{"no start", Options{Scenario: given, Shard: Shard{1, 4}}, "needs --start-at"},
		{"embedded", Options{Scenario: embedded, Shard: Shard{0, 2}, StartAt: now}, "must drive one server"},
		{"--dsn counts", Options{Scenario: embedded, DSN: "postgres://127.0.0.1/x", Shard: Shard{0, 2}, StartAt: now}, ""},
		{"past", Options{Scenario: given, Shard: Shard{1, 4}, StartAt: now.Add(-time.Minute)}, "is 60.0 s past"},
		// Several targets: each must be a given server.
		{"several given", Options{Scenario: several, Shard: Shard{1, 2}, StartAt: now}, ""},
		{"several, one embedded", Options{Scenario: someEmbedded, Shard: Shard{1, 2}, StartAt: now}, "give cache one with --dsn NAME=URL"},
	} {
		err := CheckShard(tc.opts, now)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}
