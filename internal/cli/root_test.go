package cli

import (
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// Every command a registered backend offers is on firedrill's command
// line: its --help works and firedrill --help lists it, so a backend's
// command is tested by registering the backend.
func TestBackendCommandsAreOnTheCommandLine(t *testing.T) {
	t.Parallel()
	env, top, _ := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"--help"}); code != clikit.ExitOK {
		t.Fatalf("firedrill --help: exit %d", code)
	}
	offered := 0
	for _, b := range kinds.Registry().Backends() {
		c, ok := b.(backend.Commander)
		if !ok {
			continue
		}
		probe, _, _ := clikit.MemoryEnv("")
		for _, cmd := range c.Commands(probe) {
			offered++
			if cmd.Short == "" {
				t.Errorf("backend %s: command %s has no Short line for firedrill --help", b.Kind(), cmd.Name())
			}
			if !strings.Contains(top.String(), "  "+cmd.Name()+" ") {
				t.Errorf("firedrill --help does not list %s (backend %s):\n%s", cmd.Name(), b.Kind(), top)
			}
			env, out, errb := clikit.MemoryEnv("")
			if code := Main(env, kinds.Registry(), []string{cmd.Name(), "--help"}); code != clikit.ExitOK || !strings.Contains(out.String(), "Usage:\n  firedrill "+cmd.Use) {
				t.Errorf("firedrill %s --help: exit %d\nstdout:\n%s\nstderr:\n%s", cmd.Name(), code, out, errb)
			}
		}
	}
	if offered == 0 {
		t.Error("no backend offers a command; PostgreSQL offers pgbench")
	}
}
