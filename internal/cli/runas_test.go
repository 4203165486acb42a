package cli

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/internal/secret"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// A --run-as account's password, in any of the forms --dsn takes, is in
// no byte firedrill prints or writes: the run directory of a run that
// could not connect (its run.json records the command line, masked), the
// output, and --json. Nothing listens on the servers' port, so no server
// is needed: what matters is where the text goes.
func TestRunAsPasswordInNoOutput(t *testing.T) {
	t.Parallel()
	closed := closedPort(t)
	cases := []struct {
		name, kind string
		args       func(password string) []string
	}{
		{"postgres URL", "postgres", func(pw string) []string {
			return []string{"--dsn", "postgres://admin@127.0.0.1:" + closed + "/app?connect_timeout=5",
				"--run-as", "postgres://firedrill_runner:" + pw + "@127.0.0.1:" + closed + "/app"}
		}},
		{"postgres key/value, --run-as=", "postgres", func(pw string) []string {
			return []string{"--dsn", "host=127.0.0.1 port=" + closed + " user=admin dbname=app connect_timeout=5",
				"--run-as=host=127.0.0.1 port=" + closed + " user=firedrill_runner dbname=app password = '" + strings.ReplaceAll(pw, "'", `\'`) + "'"}
		}},
		{"postgres query parameter", "postgres", func(pw string) []string {
			return []string{"--dsn", "postgres://admin@127.0.0.1:" + closed + "/app?connect_timeout=5",
				"--run-as", "postgres://firedrill_runner@127.0.0.1:" + closed + "/app?password=" + url.QueryEscape(pw)}
		}},
		{"mariadb", "mariadb", func(pw string) []string {
			return []string{"--dsn", "mysql://admin@127.0.0.1:" + closed + "/shop",
				"--run-as", "mysql://firedrill_runner:" + url.PathEscape(pw) + "@127.0.0.1:" + closed + "/shop"}
		}},
		{"redis", "redis", func(pw string) []string {
			return []string{"--dsn", "redis://admin@127.0.0.1:" + closed + "/0",
				"--run-as", "redis://firedrill_runner:" + url.PathEscape(pw) + "@127.0.0.1:" + closed + "/0"}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			password := fmt.Sprintf("RunAs-%d-s3cr'et@/?&=#%%", i)
			dir := t.TempDir()
			sc := filepath.Join(dir, "s.yaml")
			script := `"SELECT 1;"`
			if tc.kind == "redis" {
				script = `"PING"`
			}
			writeFile(t, sc, "name: runas\ntarget: {kind: "+tc.kind+"}\nduration: 2s\nworkloads:\n  - name: w\n    clients: 1\n    scripts: [{inline: "+script+"}]\n")
			out, jsonPath := filepath.Join(dir, "runs"), filepath.Join(dir, "result.json")
			leaks := secretForms(password)

			env, stdout, stderr := clikit.MemoryEnv("")
			args := append([]string{"validate", sc}, tc.args(password)...)
			if code := Main(env, kinds.Registry(), args); code != 0 {
				t.Errorf("validate: exit %d\nstderr:\n%s", code, stderr)
			}
			checkNoLeak(t, "validate's stdout", stdout.Bytes(), leaks)
			checkNoLeak(t, "validate's stderr", stderr.Bytes(), leaks)

			env, stdout, stderr = clikit.MemoryEnv("")
			args = append([]string{"run", sc, "--out", out, "--json", jsonPath}, tc.args(password)...)
			if code := Main(env, kinds.Registry(), args); code != clikit.ExitUsage {
				t.Fatalf("run: exit %d, want %d (nothing listens)\nstdout:\n%s\nstderr:\n%s", code, clikit.ExitUsage, stdout, stderr)
			}
			checkNoLeak(t, "run's stdout", stdout.Bytes(), leaks)
			checkNoLeak(t, "run's stderr", stderr.Bytes(), leaks)
			runs, _ := filepath.Glob(filepath.Join(out, "*"))
			if len(runs) != 1 {
				t.Fatalf("run directories: %v\nstderr:\n%s", runs, stderr)
			}
			checkPrivateTree(t, runs[0], leaks)
			var m timeline.Manifest
			b, _ := os.ReadFile(filepath.Join(runs[0], timeline.ManifestFile))
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			cmd := strings.Join(m.Command, " ")
			if m.Status != timeline.StatusFailed || !strings.Contains(cmd, "--run-as") || !strings.Contains(cmd, secret.Mask) {
				t.Errorf("status %q, command line %q: want failed, with --run-as masked", m.Status, m.Command)
			}
		})
	}
}

// --run-as is refused, before anything runs and without showing its
// password, where no run could use it: with the embedded server, with
// --allow-outside-schema, or on a server of another kind.
func TestRunAsRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	writeFile(t, sc, "name: runas\nduration: 2s\nworkloads:\n  - name: w\n    clients: 1\n    scripts: [{inline: \"SELECT 1;\"}]\n")
	const password = "RefusedRunAsPw"
	runAs := "postgres://firedrill_runner:" + password + "@127.0.0.1:1/app"
	dsn := "postgres://admin@127.0.0.1:1/app"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--run-as", runAs}, "--run-as names an account on a given server, but this run starts a throwaway one"},
		{[]string{"--dsn", dsn, "--run-as", runAs, "--allow-outside-schema"}, "--run-as and --allow-outside-schema contradict"},
		{[]string{"--dsn", dsn, "--run-as", "redis://runner:" + password + "@127.0.0.1:1/0"}, "--run-as names a redis server, but the run's target is a postgres server"},
		{[]string{"--dsn", dsn, "--run-as", "mongodb://runner:" + password + "@127.0.0.1:1/0"}, "--run-as: no backend takes mongodb:// URLs"},
	}
	for _, tt := range tests {
		for _, cmd := range []string{"validate", "run"} {
			args := append([]string{cmd, sc, "--out", filepath.Join(dir, "runs")}, tt.args...)
			if cmd == "validate" {
				args = append([]string{cmd, sc}, tt.args...)
			}
			env, stdout, stderr := clikit.MemoryEnv("")
			if code := Main(env, kinds.Registry(), args); code != clikit.ExitUsage || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("%v: exit %d, stderr %q; want %q", args, code, stderr, tt.want)
			}
			if strings.Contains(stdout.String()+stderr.String(), password) {
				t.Errorf("%v: the password was printed", args)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); !os.IsNotExist(err) {
		t.Errorf("a refused run made its output directory (%v)", err)
	}
}
