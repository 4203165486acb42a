package runner

import (
	"context"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
)

// When one target of several cannot be opened, the targets already open
// are closed before Run returns: the embedded PostgreSQL started for db
// is stopped and its directory removed, though cache's server refused.
func TestOpenFailureClosesTheTargetsAlreadyOpen(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: listen, note it, close.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	text := `name: half-open
duration: 5s
targets:
  db: {kind: postgres}
  cache: {kind: redis, dsn: "redis://` + addr + `/0"}
workloads:
  - {name: orders, target: db, clients: 1, scripts: [{inline: "SELECT 1;"}]}
  - {name: reads, target: cache, clients: 1, scripts: [{inline: "GET firedrill:k"}]}
`
	sc, err := scenario.Parse(t.TempDir()+"/half.yaml", []byte(text), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	_, err = Run(context.Background(), Options{Scenario: sc, Backends: kinds.Registry(), RunDir: t.TempDir() + "/run", Log: &log})
	if err == nil || !strings.Contains(err.Error(), "target cache") {
		t.Fatalf("Run: %v, want cache's open failure\nlog:\n%s", err, log.String())
	}
	removed := regexp.MustCompile(`stopped PostgreSQL on \S+ and removed (\S+)`).FindStringSubmatch(log.String())
	if removed == nil {
		t.Fatalf("db's embedded server was not stopped:\n%s", log.String())
	}
	if _, err := os.Stat(removed[1]); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", removed[1], err)
	}
}
