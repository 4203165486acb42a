package postgres

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/firedrill/firedrill/backend"
	pginstance "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/sampler/host"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/scenario"
)

// TestGivenServerCPU: a given server on this host, reached by its unix
// socket or by 127.0.0.1, has its CPU sampled as an embedded one's is:
// the postmaster found above a session's backend (pg_backend_pid()),
// and its whole tree counted.
func TestGivenServerCPU(t *testing.T) {
	t.Parallel()
	inst, err := pginstance.Start(t.Context(), pginstance.Options{})
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop PostgreSQL: %v", err)
		}
	})
	opts := backend.NewRegistry(New()).ScenarioOptions()
	sc, err := scenario.Parse(filepath.Join(t.TempDir(), "scenario.yaml"),
		[]byte("name: cpu\nduration: 1s\nworkloads:\n  - {name: w, clients: 1, scripts: [{inline: 'SELECT 1;'}]}\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, dsn := range map[string]string{
		"socket":    inst.ConnString(),
		"127.0.0.1": fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable", inst.Port(), inst.User(), inst.Database()),
	} {
		tg, err := Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsn, AllowOutsideSchema: true})
		if err != nil {
			t.Fatalf("%s: Open: %v", name, err)
		}
		if pid, note := tg.(*target).givenPostmaster(t.Context()); pid != inst.PID() {
			t.Errorf("%s: the postmaster found is %d (%s), want %d", name, pid, note, inst.PID())
		}
		sampling, err := tg.(backend.Sampled).Samplers(t.Context(), 5*time.Second)
		if err != nil {
			tg.Close(false)
			t.Fatalf("%s: Samplers: %v", name, err)
		}
		var values map[string]float64
		found := false
		for _, src := range sampling.Sources {
			if src.Name() != hostmetric.Server {
				continue
			}
			found = true
			for range 2 { // the second read has a rate
				if values, _, err = src.Sample(context.Background()); err != nil {
					t.Errorf("%s: sample the server: %v", name, err)
				}
				time.Sleep(300 * time.Millisecond)
			}
		}
		if !found {
			t.Errorf("%s: no %s sampler on a server on this host (notes %v)", name, hostmetric.Server, sampling.Notes)
		}
		// The postmaster and its helpers (checkpointer, background and
		// WAL writers …) and the samplers' session: a backend alone,
		// or any process not the postmaster, would count one.
		if n := values[hostmetric.ServerProcesses]; found && n < 4 {
			t.Errorf("%s: %v processes (values %v), want the postmaster's tree", name, n, values)
		}
		if _, ok := values[hostmetric.ServerCPU]; found && !ok {
			t.Errorf("%s: no CPU in %v", name, values)
		}
		sampling.Close()
		if err := tg.Close(false); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
}

// TestRemoteServerCPU: a server on another host is not looked for: its
// CPU is unknown, and said to be, rather than guessed.
func TestRemoteServerCPU(t *testing.T) {
	t.Parallel()
	tg := &target{connString: "host=192.0.2.1 port=5432 user=u dbname=d connect_timeout=1"}
	if pid, note := tg.givenPostmaster(t.Context()); pid != 0 || note != host.RemoteNote {
		t.Errorf("givenPostmaster of a remote server = %d, %q; want 0, %q", pid, note, host.RemoteNote)
	}
}
