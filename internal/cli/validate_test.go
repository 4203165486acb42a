package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
)

// validateScenario has a shell event and a restarting settings event:
// what run refuses without --allow-shell, and on a given server.
const validateScenario = `name: refused
duration: 5s
workloads:
  - name: w
    clients: 1
    scripts: [{inline: "SELECT 1;"}]
events:
  - {kind: shell, at: 1s, command: "true"}
  - {kind: settings, at: 2s, settings: {shared_buffers: 64MB}, restart: true}
`

// validate and run judge the events alike: each refusal with
// file:line:col, exit code 1, and run refuses before it makes a run
// directory or contacts the server.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "refused.yaml")
	if err := os.WriteFile(path, []byte(validateScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 1: a run that got as far as connecting
	// would fail with another error.
	dsn := "postgres://nobody@127.0.0.1:1/db"
	shell := path + ":8:5: shell shell-1: shell events need --allow-shell"
	restart := path + ":9:5: settings settings-2: restart needs the embedded server"
	tests := []struct {
		args []string
		want []string // refusals; none means valid
	}{
		{args: []string{"validate", path}, want: []string{shell}},
		{args: []string{"validate", "--allow-shell", path}},
		{args: []string{"validate", "--dsn", dsn, path}, want: []string{shell, restart}},
		{args: []string{"validate", "--dsn", dsn, "--allow-shell", path}, want: []string{restart}},
		{args: []string{"run", "--out", filepath.Join(dir, "runs"), path}, want: []string{shell}},
		{args: []string{"run", "--out", filepath.Join(dir, "runs"), "--dsn", dsn, "--allow-shell", path}, want: []string{restart}},
	}
	for _, tt := range tests {
		env, stdout, stderr := clikit.MemoryEnv("")
		code := Main(env, tt.args)
		if len(tt.want) == 0 {
			if code != 0 || !strings.Contains(stdout.String(), path+": ok") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", tt.args, code, stdout, stderr)
			}
			continue
		}
		if code != clikit.ExitUsage {
			t.Errorf("%v: exit %d, want %d", tt.args, code, clikit.ExitUsage)
		}
		for _, want := range tt.want {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%v: stderr %q lacks %q", tt.args, stderr, want)
			}
		}
		if got := strings.Count(stderr.String(), path+":"); got != len(tt.want) {
			t.Errorf("%v: %d refusals, want %d: %q", tt.args, got, len(tt.want), stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); !os.IsNotExist(err) {
		t.Errorf("a refused run made its output directory (%v)", err)
	}
}
