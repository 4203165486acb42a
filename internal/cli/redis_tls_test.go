package cli

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/firedrill/firedrill/db/redis/instance/tlstest"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// firedrill run --dsn rediss://… drives a real Redis over TLS end to end
// — load, samplers, a command event — on a server that requires a client
// certificate and a password, and the password is nowhere in the output.
func TestRunOverRedisTLS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	const password = "tls-Pw s3cr'et"
	srv := tlstest.Start(t, tlstest.Options{RequireClientCert: true, Password: password})
	dir := t.TempDir()
	sc := filepath.Join(dir, "cache.yaml")
	writeFile(t, sc, `name: redis-tls
duration: 2s
sample_interval: 500ms
workloads:
  - name: app
    clients: 2
    scripts:
      - inline: |
          \set k random(1, 100)
          SET firedrill:k::k v
          GET firedrill:k::k
events:
  - {kind: command, at: 1s, command: ["SET firedrill:marker 1"]}
`)
	dsn := fmt.Sprintf("rediss://:%s@%s/0?%s", "tls-Pw%20s3cr%27et", srv.TLSAddr, srv.Trusted())
	out, jsonPath := filepath.Join(dir, "runs"), filepath.Join(dir, "result.json")
	env, stdout, stderr := clikit.MemoryEnv("")
	code := Main(env, kinds.Registry(), []string{"run", sc, "--dsn", dsn, "--out", out, "--json", jsonPath, "--progress", "500ms"})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	leaks := secretForms(password)
	checkNoLeak(t, "stdout", stdout.Bytes(), leaks)
	checkNoLeak(t, "stderr", stderr.Bytes(), leaks)
	runs, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v", runs)
	}
	checkPrivateTree(t, runs[0], leaks)

	var sum timeline.Summary
	b, err := os.ReadFile(filepath.Join(runs[0], timeline.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Workloads) != 1 || sum.Workloads[0].Count == 0 || sum.Workloads[0].Failed != 0 {
		t.Fatalf("summary: %+v", sum.Workloads)
	}
	// The samplers read the server over TLS too: INFO answered.
	f, err := os.Open(filepath.Join(runs[0], timeline.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]int{}
	var eventEnds []timeline.Mark
	failed := map[string]string{}
	lines := bufio.NewScanner(zr)
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		var rec timeline.Record
		if err := json.Unmarshal(lines.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if m := rec.Mark; m != nil && m.Kind == "command" && m.Phase == timeline.PhaseEnd {
			eventEnds = append(eventEnds, *m)
		}
		if s := rec.Sample; s != nil {
			if s.Error != "" {
				failed[s.Source] = s.Error
			} else if len(s.Values) > 0 {
				sources[s.Source]++
			}
		}
	}
	if sources["redis_info"] == 0 || len(failed) > 0 {
		t.Fatalf("samples with values by source: %v; failed: %v", sources, failed)
	}
	// The command event ran over TLS.
	if len(eventEnds) != 1 || eventEnds[0].Error != "" {
		t.Fatalf("the command event's end marks: %+v", eventEnds)
	}
}
