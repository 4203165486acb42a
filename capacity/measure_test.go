package capacity

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/sampler/host"
	"github.com/firedrill/firedrill/timeline"
)

// TestServerCPUUnknown: without the server's CPU series, a step says
// why its kind could not sample it (the note of the series' source),
// rather than guessing.
func TestServerCPUUnknown(t *testing.T) {
	t.Parallel()
	run := &timeline.Run{Manifest: timeline.Manifest{Samplers: []timeline.SamplerInfo{{Name: "host"}, {Name: "server", Notes: host.RemoteNote}}}}
	m := Measure{ServerCPU: -1, HostBusy: -1, from: 1, to: 10}
	m.ReadServerCPU(run, "server", "cpu", 0)
	if m.ServerCPU != -1 || m.ServerCPUUnknown != host.RemoteNote {
		t.Fatalf("ServerCPU %v, unknown %q; want -1 and the note", m.ServerCPU, m.ServerCPUUnknown)
	}
	if s := Signals(m); !strings.Contains(s, "server CPU unknown (remote server)") {
		t.Errorf("Signals = %q, want the remote server said", s)
	}
	m = Measure{ServerCPU: -1, HostBusy: -1, from: 1, to: 10}
	m.ReadServerCPU(&timeline.Run{}, "server", "cpu", 0)
	if s := Signals(m); strings.Contains(s, "server CPU") {
		t.Errorf("Signals = %q with nothing noted, want no server CPU", s)
	}
}
