package script

import (
	"slices"
	"testing"
)

// TestPgbenchSeedsOrder checks the order in which pgbench 15 draws from its
// base sequence: every client, then :default_seed, then three per thread.
// TestPgbenchSameRandomValues (db/postgres/pgbenchcmd) checks the
// result against the real pgbench.
func TestPgbenchSeedsOrder(t *testing.T) {
	t.Parallel()
	base := NewRand(42)
	draws := make([]uint64, 20)
	for i := range draws {
		draws[i] = base.Uint64()
	}
	s := NewPgbenchSeeds(42, 4, 2, true)
	if !slices.Equal(s.Clients, draws[:4]) {
		t.Errorf("clients %v, want the first 4 draws %v", s.Clients, draws[:4])
	}
	if s.DefaultSeed != int64(draws[4]) {
		t.Errorf(":default_seed %d, want the 5th draw %d", s.DefaultSeed, int64(draws[4]))
	}
	want := []ThreadSeeds{{draws[5], draws[6], draws[7]}, {draws[8], draws[9], draws[10]}}
	if !slices.Equal(s.Threads, want) {
		t.Errorf("threads %v, want %v", s.Threads, want)
	}
	// -D default_seed: no draw, the threads move up by one; the clients'
	// seeds do not depend on -j.
	s = NewPgbenchSeeds(42, 4, 9, false)
	if s.DefaultSeed != 0 || len(s.Threads) != 4 || s.Threads[0].Choose != draws[4] || !slices.Equal(s.Clients, draws[:4]) {
		t.Errorf("without :default_seed: %+v", s)
	}
}

// TestThreadOf checks pgbench's division of clients among threads: the
// earlier threads take the larger contiguous blocks.
func TestThreadOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		clients, threads int
		want             []int
	}{
		{5, 2, []int{0, 0, 0, 1, 1}},
		{4, 2, []int{0, 0, 1, 1}},
		{7, 3, []int{0, 0, 0, 1, 1, 2, 2}},
		{3, 8, []int{0, 1, 2}},
		{3, 0, []int{0, 0, 0}},
	} {
		var got []int
		for id := range c.clients {
			got = append(got, ThreadOf(id, c.clients, c.threads))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("-c %d -j %d: threads %v, want %v", c.clients, c.threads, got, c.want)
		}
	}
}
