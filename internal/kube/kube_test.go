package kube

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

func testOptions() Options {
	return Options{
		Name:      "firedrill-stock",
		Namespace: "drills",
		Image:     "registry.example/firedrill:0.1",
		Shards:    4,
		StartAt:   time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC),
		Scenario:  "stock.yaml",
		Files: map[string][]byte{
			"stock.yaml":            []byte("name: stock\nworkloads:\n  - name: buy\n    scripts: [{file: sql/buy.sql}]\n"),
			"sql/buy.sql":           []byte("\\set id random(1, 100)\nUPDATE stock SET n = n - 1 WHERE id = :id;\n"),
			"data/blob.bin":         {0, 1, 2, 0xff, 'x'},
			"it's quoted \"x\".sql": []byte("SELECT 1;\n"),
		},
		DSNSecret: "stage-db",
		DSNKey:    "url",
		RunArgs:   []string{"--allow-outside-schema"},
		CPU:       "2",
		Memory:    "1Gi",
		Claim:     "firedrill-stock-runs",
		NewClaim:  true,
		Storage:   "1Gi",
		Duration:  time.Minute,
	}
}

// documents splits a YAML stream into its documents, each re-encoded.
func documents(t *testing.T, stream []byte) [][]byte {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(stream))
	var docs [][]byte
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if err.Error() == "EOF" {
				return docs
			}
			t.Fatalf("decoding the stream: %v", err)
		}
		out, err := yaml.Marshal(&n)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, out)
	}
}

// The manifests decode strictly (no unknown or misspelt field) into the
// Kubernetes API's own types, and say what the issue asks.
func TestManifestsDecodeStrictlyAsConfigMapAndIndexedJob(t *testing.T) {
	o := testOptions()
	out, err := Manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	docs := documents(t, out)
	if len(docs) != 3 {
		t.Fatalf("want 3 documents (PersistentVolumeClaim, ConfigMap, Job), got %d:\n%s", len(docs), out)
	}
	var pvc corev1.PersistentVolumeClaim
	if err := sigsyaml.UnmarshalStrict(docs[0], &pvc); err != nil {
		t.Fatalf("PersistentVolumeClaim does not decode strictly: %v\n%s", err, docs[0])
	}
	if pvc.Kind != "PersistentVolumeClaim" || pvc.Name != o.Claim || len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteMany ||
		pvc.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("run volume: %+v", pvc)
	}
	var cm corev1.ConfigMap
	if err := sigsyaml.UnmarshalStrict(docs[1], &cm); err != nil {
		t.Fatalf("ConfigMap does not decode strictly: %v\n%s", err, docs[1])
	}
	var job batchv1.Job
	if err := sigsyaml.UnmarshalStrict(docs[2], &job); err != nil {
		t.Fatalf("Job does not decode strictly: %v\n%s", err, docs[2])
	}
	// The start time travels in the ConfigMap, not in the pod's script.
	if cm.Data[StartKey] != strconv.FormatInt(o.StartAt.Unix(), 10) {
		t.Errorf("ConfigMap start %q, want 2026-11-25T07:00:00Z as Unix seconds", cm.Data[StartKey])
	}
	if d := job.Spec.ActiveDeadlineSeconds; d == nil || *d < int64((10*time.Minute+time.Minute)/time.Second) {
		t.Errorf("activeDeadlineSeconds %v: want the barrier and the run at least", d)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("kinds: %s %s, %s %s", cm.APIVersion, cm.Kind, job.APIVersion, job.Kind)
	}
	if cm.Name != o.Name || job.Name != o.Name || cm.Namespace != o.Namespace || job.Namespace != o.Namespace {
		t.Errorf("names: ConfigMap %s/%s, Job %s/%s", cm.Namespace, cm.Name, job.Namespace, job.Name)
	}

	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode = %v, want Indexed", spec.CompletionMode)
	}
	if spec.Completions == nil || *spec.Completions != 4 || spec.Parallelism == nil || *spec.Parallelism != 4 {
		t.Errorf("completions %v parallelism %v, want 4 and 4", spec.Completions, spec.Parallelism)
	}
	if spec.BackoffLimit == nil || *spec.BackoffLimit != 0 {
		t.Errorf("backoffLimit = %v, want 0: a retried shard would drive its share twice", spec.BackoffLimit)
	}
	pod := spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
		t.Fatalf("pod: restartPolicy %s, %d containers", pod.RestartPolicy, len(pod.Containers))
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != ImageUser ||
		sc.FSGroup == nil || *sc.FSGroup != ImageUser {
		t.Errorf("pod securityContext %+v: want the image's user %d, not root, owning the run volume", sc, ImageUser)
	}
	c := pod.Containers[0]
	if c.Image != o.Image {
		t.Errorf("image %q", c.Image)
	}
	script := strings.Join(c.Command, " ")
	for _, want := range []string{
		`--shard "$i/4"`, `i="$JOB_COMPLETION_INDEX"`, "/firedrill/scenario/" + StartFile,
		"/firedrill/scenario/stock.yaml", `--dsn "$FIREDRILL_DSN"`, "--allow-outside-schema", `job=/firedrill/runs/job-"${FIREDRILL_JOB_UID`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the pod's command lacks %q:\n%s", want, script)
		}
	}
	if len(c.Env) != 2 || c.Env[0].Name != DSNEnv || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.SecretKeyRef == nil ||
		c.Env[0].ValueFrom.SecretKeyRef.Name != "stage-db" || c.Env[0].ValueFrom.SecretKeyRef.Key != "url" {
		t.Errorf("env: %+v", c.Env)
	} else if uid := c.Env[1]; uid.Name != JobUIDEnv || uid.ValueFrom == nil || uid.ValueFrom.FieldRef == nil ||
		uid.ValueFrom.FieldRef.FieldPath != "metadata.labels['controller-uid']" {
		t.Errorf("the Job's UID: %+v", uid)
	}
	if strings.Contains(script, BeginMarker) {
		t.Error("with the run volume, the run directory should not be printed to the log")
	}
	if got := c.Resources.Limits.Cpu().String(); got != "2" {
		t.Errorf("cpu limit %s", got)
	}
	if got := c.Resources.Requests.Memory().String(); got != "1Gi" {
		t.Errorf("memory request %s", got)
	}

	// Every file travels, under its own path, with its bytes.
	var cmVolume *corev1.ConfigMapVolumeSource
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil {
			cmVolume = v.ConfigMap
		}
	}
	if cmVolume == nil || cmVolume.Name != o.Name {
		t.Fatalf("no volume of the ConfigMap: %+v", pod.Volumes)
	}
	if len(cmVolume.Items) != len(o.Files)+1 || cmVolume.Items[0].Key != StartKey || cmVolume.Items[0].Path != StartFile {
		t.Fatalf("%d items for %d files and the start time: %+v", len(cmVolume.Items), len(o.Files), cmVolume.Items)
	}
	for _, item := range cmVolume.Items[1:] {
		want, ok := o.Files[item.Path]
		if !ok {
			t.Errorf("item path %q is no file", item.Path)
			continue
		}
		got, text := cm.Data[item.Key]
		if text {
			if got != string(want) {
				t.Errorf("%s: data %q, want %q", item.Path, got, want)
			}
		} else if bin, ok := cm.BinaryData[item.Key]; !ok || !bytes.Equal(bin, want) {
			t.Errorf("%s: binaryData %v, want %v", item.Path, bin, want)
		}
	}
}

// The strict decoding the test above relies on does refuse a field the
// API does not have, so that test can fail.
func TestStrictDecodingRefusesAnUnknownField(t *testing.T) {
	out, err := Manifests(testOptions())
	if err != nil {
		t.Fatal(err)
	}
	docs := documents(t, out)
	bad := bytes.Replace(docs[2], []byte("completionMode:"), []byte("completionMod:"), 1)
	var job batchv1.Job
	if err := sigsyaml.UnmarshalStrict(bad, &job); err == nil {
		t.Fatal("a misspelt field decoded without error")
	}
}

// An existing claim is the run volume; with --results log there is
// none, and the run directories end each pod's log.
func TestVolumeClaimKeepsRunsOffTheLog(t *testing.T) {
	o := testOptions()
	o.Claim, o.NewClaim = "firedrill-runs", false // an existing claim: no PersistentVolumeClaim document
	out, err := Manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := sigsyaml.UnmarshalStrict(documents(t, out)[1], &job); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "firedrill-runs" {
			found = true
		}
	}
	if !found {
		t.Errorf("no volume of the claim: %+v", job.Spec.Template.Spec.Volumes)
	}
	if strings.Contains(strings.Join(job.Spec.Template.Spec.Containers[0].Command, " "), BeginMarker) {
		t.Error("with a volume, the run directory should not be printed to the log")
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"bad name", func(o *Options) { o.Name = "Firedrill_Stock" }, "lower-case"},
		{"no shards", func(o *Options) { o.Shards = 0 }, "--shards"},
		{"file outside", func(o *Options) { o.Files["../common.sql"] = []byte("x") }, "scenario's directory"},
		{"too big", func(o *Options) { o.Files["big.sql"] = bytes.Repeat([]byte("x"), 2<<20) }, "1 MiB"},
		{"bad cpu", func(o *Options) { o.CPU = "two" }, "--cpu"},
		{"bad secret", func(o *Options) { o.DSNSecret = "Stage DB" }, "--dsn-secret"},
	} {
		o := testOptions()
		tc.edit(&o)
		_, err := Manifests(o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// The pod's script, run here by sh as a pod would run it, passes the
// shard's flags to firedrill and prints the run directory into the log
// so that the collect commands of the header restore it byte for byte.
// firedrill is a stand-in script here: what is tested is the shell glue
// around it, and its exit code reaching the pod.
func TestPodScriptPrintsTheRunDirectoryTheHeaderCollects(t *testing.T) {
	for _, tool := range []string{"sh", "tar", "base64", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found", tool)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The stand-in writes its arguments into a run directory under --out
	// and exits 99, as a run whose threshold failed.
	stub := `#!/bin/sh
out=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--out" ]; then out="$a"; fi
  prev="$a"
done
mkdir -p "$out/20261125-070000-stock"
printf '%s\n' "$@" > "$out/20261125-070000-stock/args"
echo "progress line on stdout"
exit 99
`
	if err := os.WriteFile(filepath.Join(bin, "firedrill"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	o.Results, o.Claim = ResultsLog, ""
	runs := filepath.Join(dir, "runs")
	scen := filepath.Join(dir, "scen")
	if err := os.MkdirAll(scen, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(time.Hour).Unix()
	if err := os.WriteFile(filepath.Join(scen, StartFile), []byte(strconv.FormatInt(start, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	script := PodScript(o, scen, runs)
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "JOB_COMPLETION_INDEX=2", DSNEnv+"=postgres://app:pw@db/x")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 99 {
		t.Fatalf("exit: %v, want firedrill's 99\n%s", err, log.String())
	}
	// The header's collect pipeline, on this log.
	collected := filepath.Join(dir, "shards")
	if err := os.MkdirAll(collected, 0o755); err != nil {
		t.Fatal(err)
	}
	pipe := exec.Command("sh", "-c", "sed -n '/^"+BeginMarker+"$/,/^"+EndMarker+"$/{//!p}' | base64 -d | tar -xzf - -C "+collected)
	pipe.Stdin = bytes.NewReader(log.Bytes())
	if out, err := pipe.CombinedOutput(); err != nil {
		t.Fatalf("collecting: %v\n%s\nlog:\n%s", err, out, log.String())
	}
	args, err := os.ReadFile(filepath.Join(collected, "shard-2", "20261125-070000-stock", "args"))
	if err != nil {
		t.Fatalf("the run directory did not come back from the log: %v", err)
	}
	got := strings.Split(strings.TrimSpace(string(args)), "\n")
	want := []string{"run", scen + "/stock.yaml", "--shard", "2/4", "--start-at", time.Unix(start, 0).UTC().Format(time.RFC3339), "--out", runs + "/shard-2",
		"--dsn", "postgres://app:pw@db/x", "--allow-outside-schema"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("firedrill got\n  %q\nwant\n  %q", got, want)
	}
	if !strings.Contains(log.String(), "progress line on stdout") {
		t.Error("firedrill's own output should be in the log")
	}
}
