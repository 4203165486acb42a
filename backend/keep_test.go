package backend

import (
	"errors"
	"maps"
	"testing"
)

// fakeServer stands for a kind's throwaway server in the keeping's own
// tests: what starts, readies and stops it is counted.
type fakeServer struct {
	id      int
	stopped int
}

// TestKeptServer: without a slot every run starts its own; with one the
// first run starts it and the next takes it (Reused), a server ready
// refuses is stopped and replaced, a frozen one is not left running, and
// Keeper.Stop stops what is kept, once.
func TestKeptServer(t *testing.T) {
	t.Parallel()
	started := 0
	var readyErr error
	start := func() (*fakeServer, error) { started++; return &fakeServer{id: started}, nil }
	ready := func(*fakeServer) error { return readyErr }
	stop := func(s *fakeServer) error { s.stopped++; return nil }

	a, _ := KeptServer(nil, start, ready, stop)
	b, _ := KeptServer(nil, start, ready, stop)
	if a == b || started != 2 {
		t.Fatalf("without a slot: %d starts, same server %v; want one each", started, a == b)
	}
	var keep Keeper
	slot := keep.For("")
	first, _ := KeptServer(slot, start, ready, stop)
	if slot.Reused() || !slot.Leave(false) {
		t.Fatalf("first run: reused %v, left running %v; want a new server left running", slot.Reused(), slot.Leave(false))
	}
	second, _ := KeptServer(keep.For(""), start, ready, stop)
	if second != first || !slot.Reused() {
		t.Fatalf("second run: server %d (first %d), reused %v; want the kept one", second.id, first.id, slot.Reused())
	}
	readyErr = errors.New("down")
	third, _ := KeptServer(slot, start, ready, stop)
	if third == first || first.stopped != 1 || slot.Reused() {
		t.Fatalf("a kept server not ready: got %d, the old stopped %d times, reused %v; want a new one, the old stopped", third.id, first.stopped, slot.Reused())
	}
	if slot.Leave(true) {
		t.Errorf("a frozen server was left running")
	}
	if err := keep.Stop(); err != nil || third.stopped != 0 {
		t.Errorf("Stop after a frozen server was forgotten: %v, stopped %d; want nothing to stop (its Close stops it)", err, third.stopped)
	}
	readyErr = nil
	fourth, _ := KeptServer(slot, start, ready, stop)
	if err := keep.Stop(); err != nil || fourth.stopped != 1 {
		t.Errorf("Stop: %v, stopped %d times; want once", err, fourth.stopped)
	}
	if err := keep.Stop(); err != nil || fourth.stopped != 1 {
		t.Errorf("a second Stop: %v, stopped %d times; want still once", err, fourth.stopped)
	}
	var none *Keeper
	if none.For("x") != nil || none.Stop() != nil {
		t.Errorf("a nil Keeper keeps something")
	}
}

// TestRestartSettings: only what differs restarts a kept server, and a
// connection limit that is already larger serves.
func TestRestartSettings(t *testing.T) {
	t.Parallel()
	have := map[string]string{"max_connections": "200", "shared_buffers": "128MB"}
	for _, c := range []struct {
		want, change map[string]string
	}{
		{map[string]string{}, map[string]string{}},
		{map[string]string{"max_connections": "150"}, map[string]string{}},
		{map[string]string{"max_connections": "300"}, map[string]string{"max_connections": "300"}},
		{map[string]string{"shared_buffers": "128MB"}, map[string]string{}},
		{map[string]string{"shared_buffers": "1GB"}, map[string]string{"shared_buffers": "1GB"}},
		{map[string]string{"work_mem": "4MB"}, map[string]string{"work_mem": "4MB"}},
	} {
		if got := RestartSettings(have, c.want, "max_connections"); !maps.Equal(got, c.change) {
			t.Errorf("RestartSettings(%v) = %v, want %v", c.want, got, c.change)
		}
	}
}
