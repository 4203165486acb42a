package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// firedrill k8s writes the manifests for a scenario and its files, and
// refuses what would not work on a cluster or would leak a password:
// each refusal says what to do, with file:line:col where there is one.
func TestK8sManifestsAndRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("sql/buy.sql", "UPDATE stock SET n = n - 1 WHERE id = 1;\n")
	write("common.sql", "SELECT 1;\n")
	good := write("s/good.yaml", "name: stock-buy\nduration: 5s\nworkloads:\n  - name: buy\n    clients: 8\n    scripts: [{file: ../sql/buy.sql}]\n")
	inside := write("inside.yaml", "name: stock\nduration: 5s\nworkloads:\n  - name: buy\n    clients: 8\n    scripts: [{file: sql/buy.sql}]\n")
	withPassword := write("pw.yaml", "name: pw\ntarget: {dsn: 'postgres://app:hunter2@db:5432/stage'}\nduration: 5s\nworkloads:\n  - name: w\n    clients: 1\n    scripts: [{inline: 'SELECT 1;'}]\n")
	restart := write("restart.yaml", "name: r\nduration: 5s\nworkloads:\n  - name: w\n    clients: 1\n    scripts: [{inline: 'SELECT 1;'}]\nevents:\n  - {kind: settings, at: 2s, settings: {shared_buffers: 64MB}, restart: true}\n")

	tests := []struct {
		args []string
		code int
		want []string // in stdout when code is 0, else in stderr
	}{
		{[]string{"k8s", inside, "--shards", "3", "--dsn-secret", "stage-db", "--start-at", "2099-01-01T00:00:00Z"}, 0,
			[]string{"kind: Job", "completionMode: Indexed", "completions: 3", `--shard "$i/3"`, `start: "4070908800"`,
				"path: sql/buy.sql", "UPDATE stock SET n = n - 1", "name: firedrill-stock",
				"kind: PersistentVolumeClaim", "name: firedrill-stock-runs", "ReadWriteMany", "controller-uid", "grep -qwE 'Complete|Failed'"}},
		// --restart: the ConfigMap alone, with the new start time.
		{[]string{"k8s", inside, "--shards", "3", "--dsn-secret", "stage-db", "--start-at", "2098-06-01T00:00:00Z", "--restart"}, 0,
			[]string{"kind: ConfigMap", `start: "4052419200"`, "apply it, then the Job again"}},
		// The log path: no volume, the run directories in the logs.
		{[]string{"k8s", inside, "--shards", "3", "--dsn-secret", "stage-db", "--results", "log"}, 0,
			[]string{"kind: Job", "emptyDir", "-----BEGIN FIREDRILL RUN-----", "--restart"}},
		{[]string{"k8s", inside, "--shards", "3", "--dsn-secret", "stage-db", "--results", "log", "--claim", "runs"}, clikit.ExitUsage,
			[]string{"--claim names a run volume"}},
		{[]string{"k8s", inside, "--dsn-secret", "stage-db"}, clikit.ExitUsage, []string{"--shards N is required"}},
		{[]string{"k8s", inside, "--shards", "2"}, clikit.ExitUsage, []string{"throwaway server", "--dsn-secret"}},
		{[]string{"k8s", good, "--shards", "2", "--dsn-secret", "stage-db"}, clikit.ExitUsage,
			[]string{good + ":6:22:", "outside the scenario's directory"}},
		{[]string{"k8s", withPassword, "--shards", "2"}, clikit.ExitUsage, []string{"holds a password", "--dsn-secret"}},
		{[]string{"k8s", restart, "--shards", "2", "--dsn-secret", "stage-db"}, clikit.ExitUsage, []string{restart + ":8:5:", "restart"}},
		{[]string{"k8s", inside, "--shards", "2", "--dsn-secret", "stage-db", "--start-at", "2001-01-01T00:00:00Z"}, clikit.ExitUsage, []string{"has passed"}},
		{[]string{"k8s", inside, "--shards", "2", "--dsn-secret", "stage-db", "--start-at", "tomorrow"}, clikit.ExitUsage, []string{"RFC 3339"}},
		{[]string{"k8s", "--shards", "2"}, clikit.ExitUsage, []string{"one scenario file", "example"}},
	}
	for _, tt := range tests {
		env, stdout, stderr := clikit.MemoryEnv("")
		code := Main(env, kinds.Registry(), tt.args)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d; stderr %q", tt.args[1:], code, tt.code, stderr)
			continue
		}
		out := stderr.String()
		if code == 0 {
			out = stdout.String()
		}
		if slices.Contains(tt.args, "--restart") && (strings.Contains(out, "kind: Job") || strings.Contains(out, "kind: PersistentVolumeClaim")) {
			t.Errorf("%v: --restart prints more than the ConfigMap:\n%s", tt.args[1:], out)
		}
		if slices.Contains(tt.args, "log") && strings.Contains(out, "PersistentVolumeClaim") {
			t.Errorf("%v: --results log makes a volume:\n%s", tt.args[1:], out)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args[1:], w, out)
			}
		}
		if strings.Contains(stdout.String()+stderr.String(), "hunter2") {
			t.Errorf("%v: the password was printed", tt.args[1:])
		}
	}

	// -o writes the file and says so on stderr.
	file := filepath.Join(dir, "job.yaml")
	env, _, stderr := clikit.MemoryEnv("")
	if code := Main(env, kinds.Registry(), []string{"k8s", inside, "--shards", "2", "--dsn-secret", "db:url", "-o", file, "--", "--allow-outside-schema"}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"key: url", "--allow-outside-schema", "kubectl apply"} {
		if !strings.Contains(string(data), w) {
			t.Errorf("%s lacks %q", file, w)
		}
	}
	if !strings.Contains(stderr.String(), "wrote "+file) {
		t.Errorf("stderr %q", stderr)
	}
}

// A confined account reaches the pods from a Secret (--run-as-secret) as
// --run-as, and is checked as run checks it; a --run-as after -- that holds
// a password is refused, since it would land in the manifests, and one
// without is passed as given.
func TestK8sRunAs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sc := filepath.Join(dir, "s.yaml")
	writeFile(t, sc, "name: stock\ntarget: {kind: mariadb}\nduration: 5s\nworkloads:\n  - name: buy\n    clients: 8\n    scripts: [{inline: 'SELECT 1;'}]\n")
	base := []string{"k8s", sc, "--shards", "2", "--dsn-secret", "stage-db", "--start-at", "2099-01-01T00:00:00Z"}
	tests := []struct {
		args []string
		code int
		want []string // in stdout when code is 0, else in stderr
	}{
		{[]string{"--run-as-secret", "stage-runner"}, 0,
			[]string{"name: FIREDRILL_RUN_AS", "name: stage-runner", `--run-as "$FIREDRILL_RUN_AS"`}},
		{[]string{"--run-as-secret", "stage-runner:url"}, 0, []string{"key: url"}},
		{[]string{"--", "--run-as", "mysql://runner@db:3306/shop"}, 0, []string{"--run-as mysql://runner@db:3306/shop"}},
		{[]string{"--", "--run-as=mysql://runner:hunter2@db:3306/shop"}, clikit.ExitUsage, []string{"holds a password", "--run-as-secret"}},
		{[]string{"--run-as-secret", "stage-runner", "--", "--run-as", "mysql://runner@db/shop"}, clikit.ExitUsage, []string{"give one"}},
		{[]string{"--run-as-secret", "stage-runner", "--", "--allow-outside-schema"}, clikit.ExitUsage, []string{"contradict"}},
		{[]string{"--", "--run-as", "redis://runner@cache:6379/0"}, clikit.ExitUsage, []string{"--run-as names a redis server, but the run's target is a mariadb server"}},
		{[]string{"--run-as-secret", "Stage Runner"}, clikit.ExitUsage, []string{"not a Secret's name"}},
	}
	for _, tt := range tests {
		env, stdout, stderr := clikit.MemoryEnv("")
		args := append(append([]string(nil), base...), tt.args...)
		code := Main(env, kinds.Registry(), args)
		if code != tt.code {
			t.Errorf("%v: exit %d, want %d; stderr %q", tt.args, code, tt.code, stderr)
			continue
		}
		out := stderr.String()
		if code == 0 {
			out = stdout.String()
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tt.args, w, out)
			}
		}
		if strings.Contains(stdout.String()+stderr.String(), "hunter2") {
			t.Errorf("%v: the password was printed", tt.args)
		}
	}
}
