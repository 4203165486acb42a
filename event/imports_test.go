package event

import (
	"os/exec"
	"strings"
	"testing"
)

// The neutral package serves every kind of database: it must not speak a
// database's protocol itself, nor reach firedrill's PostgreSQL packages
// (their kinds live in their kind's folder, db/postgres/pgevent). The
// metric-name leaf pgmetric is allowed (scenario's thresholds name
// metrics), and so is pgconn through internal/secret, which reads DSNs to
// mask their passwords.
func TestNeutralImports(t *testing.T) {
	t.Parallel()
	list := func(format string) []string {
		out, err := exec.Command("go", "list", "-deps="+format, "-f", "{{.ImportPath}}: {{join .Imports \" \"}}", ".").CombinedOutput()
		if err != nil {
			t.Skipf("go list: %v\n%s", err, out)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	own := strings.Fields(strings.TrimPrefix(list("false")[0], "github.com/firedrill/firedrill/event:"))
	for _, imp := range own {
		if strings.HasPrefix(imp, "github.com/jackc/") {
			t.Errorf("package event imports %s", imp)
		}
	}
	for _, line := range list("true") {
		dep, _, _ := strings.Cut(line, ":")
		for _, banned := range []string{"/db/postgres/pgevent", "/db/postgres/instance", "/db/postgres/client", "/db/postgres/sampler"} {
			if strings.Contains(dep, banned) {
				t.Errorf("package event depends on %s", dep)
			}
		}
	}
}
