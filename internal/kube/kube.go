// Package kube writes the Kubernetes manifests that run one scenario as N
// shards: a ConfigMap holding the scenario and the files it names, and an
// Indexed Job whose pod i runs `firedrill run --shard i/N` with a start
// time common to all pods. It only writes text: it talks to no cluster,
// and it imports no Kubernetes package (the tests decode its output
// strictly into k8s.io/api's types).
package kube

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Where the pod finds things.
const (
	ScenarioDir = "/firedrill/scenario" // the ConfigMap's files
	RunsDir     = "/firedrill/runs"     // each shard's run directory is under RunsDir/shard-<i>
	// Markers around a shard's run directory (tar.gz, base64) in its log
	// when no volume is given.
	BeginMarker = "-----BEGIN FIREDRILL RUN-----"
	EndMarker   = "-----END FIREDRILL RUN-----"
	// DSNEnv is the variable the pod reads the --dsn from (a Secret's key).
	DSNEnv = "FIREDRILL_DSN"
	// RunAsEnv is the variable the pod reads the --run-as from (a
	// Secret's key): a confined account's URL holds its password.
	RunAsEnv = "FIREDRILL_RUN_AS"
	// JobUIDEnv is the variable the pod reads its Job's UID from (the
	// controller-uid label, through the downward API): each application
	// of the Job is a new Job with its own barrier and run directories.
	JobUIDEnv = "FIREDRILL_JOB_UID"
	// StartFile is the ConfigMap's start time (Unix seconds), as the pod
	// finds it in ScenarioDir; StartKey is its key.
	StartFile = ".firedrill-start"
	StartKey  = "start"
	// StartLead is how long after the last shard is ready (the barrier
	// of the run volume) all shards start: the time each takes to see
	// the others' ready marks, with room to spare.
	StartLead = 10 * time.Second
	// ExitBarrier is a pod's exit code when the shards could not all
	// start: not every shard became ready within the barrier's timeout,
	// or (without a run volume) the start time had passed.
	ExitBarrier = 98
)

// The places of the run directories.
const (
	// ResultsVolume (the default) keeps each shard's run directory on a
	// volume (a PersistentVolumeClaim the manifests make, or --claim),
	// which also holds the barrier that starts all shards together.
	ResultsVolume = "volume"
	// ResultsLog prints each shard's run directory into its log instead,
	// for clusters without ReadWriteMany volumes.
	ResultsLog = "log"
)

// maxConfigMap is the API server's limit on a ConfigMap's data (1 MiB),
// less room for the object's own fields.
const maxConfigMap = 1<<20 - 16<<10

// Options say what to generate.
type Options struct {
	Name      string // the Job's and ConfigMap's name (a DNS-1123 label)
	Namespace string // "" = the namespace kubectl uses
	Image     string // an image with firedrill, sh, date, tar and base64 on PATH (the Dockerfile's)
	Shards    int
	StartAt   time.Time
	// Scenario is the scenario file's name inside the ConfigMap (a path
	// relative to its directory, as are Files' keys).
	Scenario string
	// Files are the scenario and every file it names, by path relative to
	// the scenario's directory.
	Files map[string][]byte
	// DSNSecret and DSNKey name the Secret key holding the --dsn; ""
	// leaves the target to the scenario (target.dsn).
	DSNSecret, DSNKey string
	// RunAsSecret and RunAsKey name the Secret key holding the --run-as;
	// "" makes no --run-as of it.
	RunAsSecret, RunAsKey string
	// Results is where the run directories go: ResultsVolume (the
	// default, "") or ResultsLog.
	Results string
	// Claim is the PersistentVolumeClaim (ReadWriteMany) of the run
	// volume: an existing one, or with NewClaim the one the manifests
	// make (Storage big, of StorageClass, "" for the cluster's default).
	Claim                 string
	NewClaim              bool
	Storage, StorageClass string
	// Duration is the scenario's length: with the start and the
	// barrier's time it bounds the Job (activeDeadlineSeconds), so that
	// a hung shard fails the Job rather than leave a wait hanging.
	Duration time.Duration
	// BarrierTimeout is how long a shard waits for the others to be
	// ready; 0 is 10 minutes.
	BarrierTimeout time.Duration
	// RunArgs are more `firedrill run` flags, passed as given.
	RunArgs []string
	// CPU and Memory are each pod's requests and limits ("" = none).
	CPU, Memory string
}

var (
	dns1123   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	keyChars  = regexp.MustCompile(`[^-._a-zA-Z0-9]`)
	quantity  = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)
	safeImage = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9._/:@]*$`)
)

// Check reports the first problem with o, in words a user can act on.
func (o Options) Check() error {
	switch {
	case len(o.Name) > 52 || !dns1123.MatchString(o.Name):
		// 63 less the "-" and index the Job controller appends to pod names.
		return fmt.Errorf("name %q: a Kubernetes name is lower-case letters, digits and '-', at most 52 characters, starting and ending with a letter or digit (--name)", o.Name)
	case o.Namespace != "" && (len(o.Namespace) > 63 || !dns1123.MatchString(o.Namespace)):
		return fmt.Errorf("namespace %q is not a Kubernetes name (--namespace)", o.Namespace)
	case o.Shards < 1:
		return fmt.Errorf("--shards %d: need at least 1", o.Shards)
	case o.Shards > 10000:
		return fmt.Errorf("--shards %d: at most 10000", o.Shards)
	case !safeImage.MatchString(o.Image):
		return fmt.Errorf("--image %q is not an image reference", o.Image)
	case o.StartAt.IsZero():
		return fmt.Errorf("no start time (--start-at)")
	case o.DSNSecret != "" && !dns1123Subdomain(o.DSNSecret):
		return fmt.Errorf("--dsn-secret %q is not a Secret's name", o.DSNSecret)
	case o.RunAsSecret != "" && !dns1123Subdomain(o.RunAsSecret):
		return fmt.Errorf("--run-as-secret %q is not a Secret's name", o.RunAsSecret)
	case o.Results != "" && o.Results != ResultsVolume && o.Results != ResultsLog:
		return fmt.Errorf("--results %q: want %s or %s", o.Results, ResultsVolume, ResultsLog)
	case o.volume() && (o.Claim == "" || !dns1123Subdomain(o.Claim)):
		return fmt.Errorf("--claim %q is not a PersistentVolumeClaim's name", o.Claim)
	case !o.volume() && o.Claim != "":
		return fmt.Errorf("--claim names a run volume, and --results %s keeps the runs in the logs: give one", ResultsLog)
	case o.NewClaim && !quantity.MatchString(o.Storage):
		return fmt.Errorf("--storage %q is not a quantity (e.g. 1Gi)", o.Storage)
	case o.StorageClass != "" && !dns1123Subdomain(o.StorageClass):
		return fmt.Errorf("--storage-class %q is not a StorageClass's name", o.StorageClass)
	case o.CPU != "" && !quantity.MatchString(o.CPU):
		return fmt.Errorf("--cpu %q is not a quantity (e.g. 1, 500m)", o.CPU)
	case o.Memory != "" && !quantity.MatchString(o.Memory):
		return fmt.Errorf("--memory %q is not a quantity (e.g. 512Mi, 2Gi)", o.Memory)
	}
	if _, ok := o.Files[o.Scenario]; !ok {
		return fmt.Errorf("the scenario %q is not among the files", o.Scenario)
	}
	size := 0
	for name, data := range o.Files {
		if name == "" || path.IsAbs(name) || path.Clean(name) != name || strings.HasPrefix(name, "../") || name == ".." {
			return fmt.Errorf("%q: only files in the scenario's directory or below can travel in the ConfigMap", name)
		}
		size += len(data)
	}
	if size > maxConfigMap {
		return fmt.Errorf("the scenario and its files are %d bytes; a ConfigMap holds at most about 1 MiB: ship large files in the image instead", size)
	}
	return nil
}

// volume says whether the run directories go to the run volume.
func (o Options) volume() bool { return o.Results != ResultsLog }

// barrierTimeout is BarrierTimeout or its default.
func (o Options) barrierTimeout() time.Duration {
	if o.BarrierTimeout > 0 {
		return o.BarrierTimeout
	}
	return 10 * time.Minute
}

func dns1123Subdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !dns1123.MatchString(part) {
			return false
		}
	}
	return true
}

// Manifests returns the ConfigMap and the Job, as one YAML stream for
// `kubectl apply -f -`, after a comment saying how to collect and merge
// the shards' run directories.
func Manifests(o Options) ([]byte, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(Instructions(o))
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if o.volume() && o.NewClaim {
		if err := enc.Encode(claim(o)); err != nil {
			return nil, err
		}
	}
	if err := enc.Encode(configMap(o)); err != nil {
		return nil, err
	}
	if err := enc.Encode(job(o)); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// RestartConfigMap returns the ConfigMap alone, with o's start time:
// what `firedrill k8s --restart` prints to apply before the Job is
// applied again, when no run volume's barrier can pick a new start.
func RestartConfigMap(o Options) ([]byte, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# firedrill: the start time of %s's shards, now %s; apply it, then the Job again.\n", o.Name, o.StartAt.UTC().Format(time.RFC3339))
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(configMap(o)); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Instructions are the comment at the top of the manifests: apply, wait
// (for success or failure), collect, merge, and how to run again.
func Instructions(o Options) string {
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	var b strings.Builder
	if o.volume() {
		fmt.Fprintf(&b, "# firedrill: %s as %d shards, starting together at %s or, applied later, %s after the last shard is ready.\n",
			o.Scenario, o.Shards, o.StartAt.UTC().Format(time.RFC3339), StartLead)
	} else {
		fmt.Fprintf(&b, "# firedrill: %s as %d shards, all starting at %s (the ConfigMap's start time).\n", o.Scenario, o.Shards, o.StartAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "#   kubectl%s apply -f THIS_FILE\n", ns)
	fmt.Fprintf(&b, "# Wait until the Job has completed or failed (a failed shard fails it at once; activeDeadlineSeconds bounds it):\n")
	fmt.Fprintf(&b, "#   until kubectl%s get job/%s -o jsonpath='{.status.conditions[?(@.status==\"True\")].type}' | grep -qwE 'Complete|Failed'; do sleep 10; done\n", ns, o.Name)
	fmt.Fprintf(&b, "#   kubectl%s get job/%s -o jsonpath='{.status.conditions[?(@.status==\"True\")].type}{\"\\n\"}'\n", ns, o.Name)
	if o.volume() {
		fmt.Fprintf(&b, "# Each shard writes its run directory under %s/job-<the Job's uid>/shard-<i>/ on the volume %s;\n", RunsDir, o.Claim)
		fmt.Fprintf(&b, "# copy them out through a pod that mounts it, and merge:\n")
		fmt.Fprintf(&b, "#   uid=$(kubectl%s get job/%s -o jsonpath='{.metadata.uid}')\n", ns, o.Name)
		fmt.Fprintf(&b, "#   kubectl%s run %s-fetch --image=%s --restart=Never --overrides='%s'\n", ns, o.Name, o.Image, fetchOverrides(o))
		fmt.Fprintf(&b, "#   kubectl%s wait --for=condition=Ready --timeout=5m pod/%s-fetch\n", ns, o.Name)
		fmt.Fprintf(&b, "#   kubectl%s cp %s-fetch:%s/job-$uid shards && kubectl%s delete pod/%s-fetch\n", ns, o.Name, RunsDir, ns, o.Name)
		fmt.Fprintf(&b, "#   firedrill merge shards/shard-*/* --out merged\n")
		fmt.Fprintf(&b, "# To run again: kubectl%s delete job/%s, then apply this file again: the new Job's shards start together.\n", ns, o.Name)
	} else {
		fmt.Fprintf(&b, "# Each shard prints its run directory (tar.gz, base64) at the end of its log:\n")
		fmt.Fprintf(&b, "#   mkdir -p shards; for i in $(seq 0 %d); do\n", o.Shards-1)
		fmt.Fprintf(&b, "#     kubectl%s logs $(kubectl%s get pods -l job-name=%s,batch.kubernetes.io/job-completion-index=$i -o name | tail -n 1) \\\n", ns, ns, o.Name)
		fmt.Fprintf(&b, "#       | sed -n '/^%s$/,/^%s$/{//!p}' | base64 -d | tar -xzf - -C shards\n", BeginMarker, EndMarker)
		fmt.Fprintf(&b, "#   done\n#   firedrill merge shards/shard-*/* --out merged\n")
		fmt.Fprintf(&b, "# To run again: kubectl%s delete job/%s; firedrill k8s ... --restart | kubectl%s apply -f - (a new start time); apply this file's Job again.\n", ns, o.Name, ns)
		fmt.Fprintf(&b, "# A shard that finds the start time passed exits %d without load.\n", ExitBarrier)
	}
	fmt.Fprintf(&b, "#   kubectl%s delete job/%s configmap/%s\n", ns, o.Name, o.Name)
	return b.String()
}

// fetchOverrides is the pod spec `kubectl run` gets to mount the run
// volume, for kubectl cp to copy the run directories out of.
func fetchOverrides(o Options) string {
	return fmt.Sprintf(`{"spec":{"volumes":[{"name":"runs","persistentVolumeClaim":{"claimName":%q}}],`+
		`"containers":[{"name":"fetch","image":%q,"command":["sleep","3600"],"volumeMounts":[{"name":"runs","mountPath":%q}]}]}}`,
		o.Claim, o.Image, RunsDir)
}

type claimDoc struct {
	APIVersion string    `yaml:"apiVersion"`
	Kind       string    `yaml:"kind"`
	Metadata   meta      `yaml:"metadata"`
	Spec       claimSpec `yaml:"spec"`
}

type claimSpec struct {
	AccessModes      []string `yaml:"accessModes"`
	StorageClassName string   `yaml:"storageClassName,omitempty"`
	Resources        struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
}

// claim is the run volume the manifests make: ReadWriteMany, since every
// shard's pod writes its run directory and its ready mark there.
func claim(o Options) claimDoc {
	c := claimDoc{APIVersion: "v1", Kind: "PersistentVolumeClaim", Metadata: meta{Name: o.Claim, Namespace: o.Namespace, Labels: labels(o)}}
	c.Spec.AccessModes = []string{"ReadWriteMany"}
	c.Spec.StorageClassName = o.StorageClass
	c.Spec.Resources.Requests = map[string]string{"storage": o.Storage}
	return c
}

type meta struct {
	Name      string            `yaml:"name"`
	Namespace string            `yaml:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

type configMapDoc struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   meta              `yaml:"metadata"`
	Data       map[string]string `yaml:"data,omitempty"`
	BinaryData map[string]string `yaml:"binaryData,omitempty"` // base64, as the API writes it
}

// keys gives each file a ConfigMap key (keys cannot hold '/'), unique and
// stable: the files in name order, "f<n>-<name with / as _>".
func keys(files map[string][]byte) (names []string, key map[string]string) {
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	key = make(map[string]string, len(names))
	for i, name := range names {
		k := keyChars.ReplaceAllString(strings.ReplaceAll(name, "/", "_"), "_")
		if len(k) > 240 {
			k = k[len(k)-240:]
		}
		key[name] = "f" + strconv.Itoa(i) + "-" + k
	}
	return names, key
}

func labels(o Options) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "firedrill", "app.kubernetes.io/instance": o.Name}
}

func configMap(o Options) configMapDoc {
	cm := configMapDoc{APIVersion: "v1", Kind: "ConfigMap", Metadata: meta{Name: o.Name, Namespace: o.Namespace, Labels: labels(o)},
		Data: map[string]string{StartKey: strconv.FormatInt(o.StartAt.Unix(), 10)}}
	names, key := keys(o.Files)
	for _, name := range names {
		data := o.Files[name]
		if isText(data) {
			cm.Data[key[name]] = string(data)
		} else {
			if cm.BinaryData == nil {
				cm.BinaryData = make(map[string]string)
			}
			cm.BinaryData[key[name]] = base64.StdEncoding.EncodeToString(data)
		}
	}
	return cm
}

// isText reports whether data can be a ConfigMap's data value: UTF-8
// that YAML carries as a string unchanged.
func isText(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, r := range string(data) {
		if r < 0x20 && r != '\n' && r != '\t' {
			return false
		}
	}
	return true
}

type jobDoc struct {
	APIVersion string  `yaml:"apiVersion"`
	Kind       string  `yaml:"kind"`
	Metadata   meta    `yaml:"metadata"`
	Spec       jobSpec `yaml:"spec"`
}

type jobSpec struct {
	CompletionMode        string      `yaml:"completionMode"`
	Completions           int         `yaml:"completions"`
	Parallelism           int         `yaml:"parallelism"`
	BackoffLimit          int         `yaml:"backoffLimit"`
	ActiveDeadlineSeconds int64       `yaml:"activeDeadlineSeconds,omitempty"`
	Template              podTemplate `yaml:"template"`
}

type podTemplate struct {
	Metadata struct {
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec podSpec `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy   string             `yaml:"restartPolicy"`
	SecurityContext podSecurityContext `yaml:"securityContext"`
	Containers      []container        `yaml:"containers"`
	Volumes         []volume           `yaml:"volumes"`
}

// podSecurityContext runs the pod as the image's user (the Dockerfile's
// 10001), never root, and gives the run volume to its group so that it
// may write there.
type podSecurityContext struct {
	RunAsNonRoot bool  `yaml:"runAsNonRoot"`
	RunAsUser    int64 `yaml:"runAsUser"`
	RunAsGroup   int64 `yaml:"runAsGroup"`
	FSGroup      int64 `yaml:"fsGroup"`
}

// ImageUser is the user (and group) the Dockerfile's image runs as.
const ImageUser = 10001

type container struct {
	Name         string        `yaml:"name"`
	Image        string        `yaml:"image"`
	Command      []string      `yaml:"command"`
	Env          []envVar      `yaml:"env,omitempty"`
	VolumeMounts []volumeMount `yaml:"volumeMounts"`
	Resources    *resources    `yaml:"resources,omitempty"`
}

type envVar struct {
	Name      string `yaml:"name"`
	ValueFrom struct {
		SecretKeyRef *secretKeyRef `yaml:"secretKeyRef,omitempty"`
		FieldRef     *fieldRef     `yaml:"fieldRef,omitempty"`
	} `yaml:"valueFrom"`
}

type secretKeyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type fieldRef struct {
	FieldPath string `yaml:"fieldPath"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly,omitempty"`
}

type resources struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

type volume struct {
	Name                  string                 `yaml:"name"`
	ConfigMap             *configMapVolume       `yaml:"configMap,omitempty"`
	EmptyDir              *struct{}              `yaml:"emptyDir,omitempty"`
	PersistentVolumeClaim *persistentVolumeClaim `yaml:"persistentVolumeClaim,omitempty"`
}

type configMapVolume struct {
	Name  string    `yaml:"name"`
	Items []keyPath `yaml:"items"`
}

type keyPath struct {
	Key  string `yaml:"key"`
	Path string `yaml:"path"`
}

type persistentVolumeClaim struct {
	ClaimName string `yaml:"claimName"`
}

func job(o Options) jobDoc {
	j := jobDoc{APIVersion: "batch/v1", Kind: "Job", Metadata: meta{Name: o.Name, Namespace: o.Namespace, Labels: labels(o)}}
	// Indexed: pod i gets JOB_COMPLETION_INDEX=i. A shard that failed is
	// not retried: its start time has passed, and a second try would
	// drive its share twice.
	j.Spec = jobSpec{CompletionMode: "Indexed", Completions: o.Shards, Parallelism: o.Shards, BackoffLimit: 0}
	if o.Duration > 0 {
		// Scheduled, waiting for the start (or the barrier), running,
		// and a quarter of an hour for setup and writing the results:
		// past that the Job fails, and so does a wait on it.
		lead := max(time.Until(o.StartAt), 0)
		j.Spec.ActiveDeadlineSeconds = int64((lead + o.barrierTimeout() + StartLead + o.Duration + 15*time.Minute) / time.Second)
	}
	j.Spec.Template.Metadata.Labels = labels(o)
	c := container{
		Name:    "firedrill",
		Image:   o.Image,
		Command: []string{"/bin/sh", "-c", PodScript(o, ScenarioDir, RunsDir)},
		VolumeMounts: []volumeMount{
			{Name: "scenario", MountPath: ScenarioDir, ReadOnly: true},
			{Name: "runs", MountPath: RunsDir},
		},
	}
	for _, from := range []struct{ env, secret, key string }{{DSNEnv, o.DSNSecret, o.DSNKey}, {RunAsEnv, o.RunAsSecret, o.RunAsKey}} {
		if from.secret == "" {
			continue
		}
		var e envVar
		e.Name = from.env
		e.ValueFrom.SecretKeyRef = &secretKeyRef{Name: from.secret, Key: from.key}
		c.Env = append(c.Env, e)
	}
	if o.volume() {
		// The Job's UID (its pods' controller-uid label) names this
		// application's barrier and run directories on the volume.
		var e envVar
		e.Name = JobUIDEnv
		e.ValueFrom.FieldRef = &fieldRef{FieldPath: "metadata.labels['controller-uid']"}
		c.Env = append(c.Env, e)
	}
	if o.CPU != "" || o.Memory != "" {
		r := &resources{Requests: map[string]string{}, Limits: map[string]string{}}
		if o.CPU != "" {
			r.Requests["cpu"], r.Limits["cpu"] = o.CPU, o.CPU
		}
		if o.Memory != "" {
			r.Requests["memory"], r.Limits["memory"] = o.Memory, o.Memory
		}
		c.Resources = r
	}
	names, key := keys(o.Files)
	cmv := &configMapVolume{Name: o.Name, Items: []keyPath{{Key: StartKey, Path: StartFile}}}
	for _, name := range names {
		cmv.Items = append(cmv.Items, keyPath{Key: key[name], Path: name})
	}
	runs := volume{Name: "runs", EmptyDir: &struct{}{}}
	if o.volume() {
		runs = volume{Name: "runs", PersistentVolumeClaim: &persistentVolumeClaim{ClaimName: o.Claim}}
	}
	j.Spec.Template.Spec = podSpec{
		RestartPolicy:   "Never",
		SecurityContext: podSecurityContext{RunAsNonRoot: true, RunAsUser: ImageUser, RunAsGroup: ImageUser, FSGroup: ImageUser},
		Containers:      []container{c},
		Volumes:         []volume{{Name: "scenario", ConfigMap: cmv}, runs},
	}
	return j
}

// PodScript is the shell script each pod runs, with the scenario's files
// (and the ConfigMap's start time, StartFile) under scenarioDir and run
// directories under runsDir (the tests run it on this machine with other
// directories). It runs shard $JOB_COMPLETION_INDEX and sends
// firedrill's output to the log; firedrill's exit code is the pod's.
//
// The start time is computed when the pod starts, so that the same
// manifest applied again later is not stale. On the run volume each
// shard marks itself ready under the Job's UID and waits for all the
// others' marks (at most the barrier's timeout, else it exits
// ExitBarrier); all then start at the ConfigMap's start time or, if that
// comes too soon (applied again later), StartLead after the last mark:
// every shard reads the same marks, so every shard computes the same
// moment. Without the volume the ConfigMap's start time is the only one
// the shards share: a shard that finds it passed exits ExitBarrier
// (`firedrill k8s --restart` writes a new one), and the run directory
// ends the log between the markers.
func PodScript(o Options, scenarioDir, runsDir string) string {
	var b strings.Builder
	b.WriteString("set -u\n")
	b.WriteString("i=\"$JOB_COMPLETION_INDEX\"\n")
	fmt.Fprintf(&b, "start=$(cat %s) || exit %d\n", shellQuote(path.Join(scenarioDir, StartFile)), ExitBarrier)
	b.WriteString("now=$(date -u +%s)\n")
	if o.volume() {
		fmt.Fprintf(&b, "job=%s/job-\"${%s:-unknown}\"\n", shellQuote(runsDir), JobUIDEnv)
		b.WriteString("out=\"$job/shard-$i\"\n")
		b.WriteString("mkdir -p \"$out\" \"$job/ready\" || exit " + strconv.Itoa(ExitBarrier) + "\n")
		b.WriteString("echo \"$now\" > \"$job/ready/.$i\" && mv \"$job/ready/.$i\" \"$job/ready/$i\" || exit " + strconv.Itoa(ExitBarrier) + "\n")
		fmt.Fprintf(&b, "until [ \"$(ls \"$job/ready\" | wc -l)\" -ge %d ]; do\n", o.Shards)
		fmt.Fprintf(&b, "  if [ $(( $(date -u +%%s) - now )) -ge %d ]; then\n", int64(o.barrierTimeout()/time.Second))
		fmt.Fprintf(&b, "    echo \"firedrill: shard $i: $(ls \"$job/ready\" | wc -l) of %d shards ready after %s; not starting\" >&2\n", o.Shards, o.barrierTimeout())
		fmt.Fprintf(&b, "    exit %d\n  fi\n  sleep 1\ndone\n", ExitBarrier)
		b.WriteString("last=$(cat \"$job\"/ready/* | sort -n | tail -n 1)\n")
		fmt.Fprintf(&b, "if [ \"$start\" -lt $((last + %d)) ]; then start=$((last + %d)); fi\n", int64(StartLead/time.Second), int64(StartLead/time.Second))
	} else {
		fmt.Fprintf(&b, "out=%s/shard-\"$i\"\n", shellQuote(runsDir))
		b.WriteString("mkdir -p \"$out\"\n")
		fmt.Fprintf(&b, "if [ \"$start\" -lt \"$now\" ]; then\n")
		fmt.Fprintf(&b, "  echo \"firedrill: shard $i: the start time $(date -u -d \"@$start\" +%%Y-%%m-%%dT%%H:%%M:%%SZ) has passed (the Job was applied again?): apply the output of 'firedrill k8s ... --restart', then the Job\" >&2\n")
		fmt.Fprintf(&b, "  exit %d\nfi\n", ExitBarrier)
	}
	fmt.Fprintf(&b, "firedrill run %s --shard \"$i/%d\" --start-at \"$(date -u -d \"@$start\" +%%Y-%%m-%%dT%%H:%%M:%%SZ)\" --out \"$out\"",
		shellQuote(path.Join(scenarioDir, o.Scenario)), o.Shards)
	if o.DSNSecret != "" {
		// The DSN comes from the Secret through the environment, so it is
		// in no manifest; firedrill masks its password in all it prints.
		fmt.Fprintf(&b, " --dsn \"$%s\"", DSNEnv)
	}
	if o.RunAsSecret != "" {
		fmt.Fprintf(&b, " --run-as \"$%s\"", RunAsEnv)
	}
	for _, a := range o.RunArgs {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString(" 1>&2\n")
	b.WriteString("rc=$?\n")
	if !o.volume() {
		fmt.Fprintf(&b, "printf '%%s\\n' %s\n", shellQuote(BeginMarker))
		fmt.Fprintf(&b, "tar -C %s -czf - shard-\"$i\" | base64\n", shellQuote(runsDir))
		fmt.Fprintf(&b, "printf '%%s\\n' %s\n", shellQuote(EndMarker))
	}
	b.WriteString("exit \"$rc\"\n")
	return b.String()
}

// shellQuote quotes s for sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
