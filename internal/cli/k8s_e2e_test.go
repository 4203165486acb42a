package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/internal/kube"
	"github.com/firedrill/firedrill/timeline"
)

// What `firedrill k8s --results log` prints works as a cluster would run
// it (the run volume's barrier is internal/kube's test): the Job's
// own pod script, run here by sh once per completion index (the
// scenario's files where the ConfigMap would put them, the DSN in the
// environment as the Secret would give it), drives the shards against
// one real server; the header's collect commands restore every shard's
// run directory from its log; and merge combines them.
func TestK8sJobRunsShardsThatMerge(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server and child processes")
	}
	for _, tool := range []string{"sh", "tar", "base64", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	inst, err := postgres.Start(context.Background(), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	tmp := privateTmp(t)
	src := filepath.Join(tmp, "src")
	if err := os.MkdirAll(filepath.Join(src, "sql"), 0o755); err != nil {
		t.Fatal(err)
	}
	scenarioText := `name: k8s-e2e
target: {kind: postgres}
setup:
  sql: [{file: sql/setup.sql}]
duration: 3s
workloads:
  - name: w
    rate: 100
    clients: 4
    scripts: [{file: sql/hit.sql}]
`
	files := map[string]string{
		"e2e.yaml":      scenarioText,
		"sql/setup.sql": "CREATE TABLE IF NOT EXISTS hits (id int PRIMARY KEY, n int);\nINSERT INTO hits VALUES (1, 0) ON CONFLICT DO NOTHING;\n",
		"sql/hit.sql":   "SELECT n FROM hits WHERE id = 1;\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	const shards = 2
	startAt := time.Now().Add(15 * time.Second).UTC().Truncate(time.Second).Format(time.RFC3339)
	manifests := runCLI(t, tmp, "k8s", filepath.Join(src, "e2e.yaml"), "--shards", fmt.Sprint(shards), "--dsn-secret", "db", "--start-at", startAt, "--results", "log")

	// The pod's script and the ConfigMap's files, as the cluster would
	// have them.
	dec := yaml.NewDecoder(strings.NewReader(manifests))
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	var job struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Command []string `yaml:"command"`
					} `yaml:"containers"`
					Volumes []struct {
						ConfigMap *struct {
							Items []struct{ Key, Path string } `yaml:"items"`
						} `yaml:"configMap"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := dec.Decode(&cm); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&job); err != nil {
		t.Fatal(err)
	}
	mounted := filepath.Join(tmp, "mounted")
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.ConfigMap == nil {
			continue
		}
		for _, item := range v.ConfigMap.Items {
			p := filepath.Join(mounted, item.Path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(cm.Data[item.Key]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	runs := filepath.Join(tmp, "runs")
	script := job.Spec.Template.Spec.Containers[0].Command[2]
	script = strings.ReplaceAll(script, kube.ScenarioDir, mounted)
	script = strings.ReplaceAll(script, kube.RunsDir, runs)

	// firedrill on the pod's PATH: this test binary acting as it.
	bin := filepath.Join(tmp, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf(`#!/bin/sh
args=""
sep=""
for a in "$@"; do args="$args$sep$a"; sep=$(printf '\037'); done
%s="$args" exec %q -test.run='^TestCLIHelperProcess$' -test.timeout=5m
`, cliHelperEnv, os.Args[0])
	if err := os.WriteFile(filepath.Join(bin, "firedrill"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	type pod struct {
		cmd *exec.Cmd
		log *syncBuffer
	}
	var pods []pod
	for i := range shards {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "TMPDIR="+tmp,
			fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), kube.DSNEnv+"="+inst.ConnString())
		log := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
		pods = append(pods, pod{cmd, log})
	}
	collected := filepath.Join(tmp, "shards")
	if err := os.MkdirAll(collected, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, p := range pods {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("pod %d: %v\n%s", i, err, p.log)
		}
		// The header's pipeline, on this pod's log.
		collect := exec.Command("sh", "-c", "sed -n '/^"+kube.BeginMarker+"$/,/^"+kube.EndMarker+"$/{//!p}' | base64 -d | tar -xzf - -C "+collected)
		collect.Stdin = bytes.NewReader([]byte(p.log.String()))
		if out, err := collect.CombinedOutput(); err != nil {
			t.Fatalf("collecting pod %d: %v\n%s", i, err, out)
		}
	}
	dirs, err := filepath.Glob(filepath.Join(collected, "shard-*", "*"))
	if err != nil || len(dirs) != shards {
		t.Fatalf("collected %v (%v), want %d run directories", dirs, err, shards)
	}
	merged := filepath.Join(tmp, "merged")
	out := runCLI(t, tmp, append(append([]string{"merge"}, dirs...), "--out", merged)...)
	if !strings.Contains(out, fmt.Sprintf("merged %d shards", shards)) {
		t.Errorf("merge says:\n%s", out)
	}
	r, err := timeline.Open(merged)
	if err != nil {
		t.Fatal(err)
	}
	// 100/s for 3 s, whatever the machine's load does to latency.
	if n := r.Summary.Workloads[0].Count; n < 200 || n > 400 {
		t.Errorf("the merged run has %d transactions, want about 300", n)
	}
}
