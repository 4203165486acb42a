package mariadbrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"
)

// TestMariaDBConnectionLimit: 16 clients and firedrill's own sessions
// against max_connections = 18 fill every slot (Threads_connected 18);
// the openchat runs (max_connections 200) do not come near it.
func TestMariaDBConnectionLimit(t *testing.T) {
	t.Parallel()
	var found *diagnose.Finding
	for _, f := range (connectionSaturation{}).Check(openRecording(t, "mariadb-connections")) {
		if strings.Contains(f.Headline, "max_connections 18") {
			found = &f
		}
	}
	if found == nil || found.Severity != diagnose.Warning {
		t.Fatalf("mariadb-connections: %+v, want a warning at max_connections 18", found)
	}
	if text := findingText(*found); !strings.Contains(text, "Threads_connected") || !strings.Contains(text, "1040") {
		t.Errorf("the finding:\n%s", text)
	}
	for _, name := range []string{"openchat-broken", "openchat-fixed"} {
		if fs := (connectionSaturation{}).Check(openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %+v", name, fs)
		}
	}
}
