package mariadb

import (
	"context"
	"testing"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/sampler/host"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

// TestGivenServerCPU: a given server on this host has its CPU sampled
// as an embedded one's is: its one mariadbd process, found from
// @@pid_file (or the listener of its port) and checked to be mariadbd.
func TestGivenServerCPU(t *testing.T) {
	t.Parallel()
	inst := startServer(t)
	sc := loadScenario(t, map[string]string{"scenario.yaml": "name: cpu\nduration: 1s\n" + workloadYAML})
	tg, err := Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsnOf(inst, "")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() {
		if err := tg.Close(false); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if pid, note := tg.(*target).givenServerPID(t.Context()); pid != inst.PID() {
		t.Errorf("the server process found is %d (%s), want %d", pid, note, inst.PID())
	}
	if pid, err := host.Listener(inst.Port(), ""); err != nil || pid != inst.PID() {
		t.Errorf("the listener of port %d is %d (%v), want mariadbd %d", inst.Port(), pid, err, inst.PID())
	}
	sampling, err := tg.(backend.Sampled).Samplers(t.Context(), 5*time.Second)
	if err != nil {
		t.Fatalf("Samplers: %v", err)
	}
	defer sampling.Close()
	found := false
	for _, src := range sampling.Sources {
		if src.Name() != hostmetric.Server {
			continue
		}
		found = true
		var values map[string]float64
		for range 2 { // the second read has a rate
			if values, _, err = src.Sample(context.Background()); err != nil {
				t.Errorf("sample the server: %v", err)
			}
			time.Sleep(300 * time.Millisecond)
		}
		if _, ok := values[hostmetric.ServerCPU]; !ok || values[hostmetric.ServerProcesses] < 1 {
			t.Errorf("values %v: want the server's CPU and its process", values)
		}
	}
	if !found {
		t.Errorf("no %s sampler on a server on this host (notes %v)", hostmetric.Server, sampling.Notes)
	}
}
