package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/internal/kube"
	"github.com/firedrill/firedrill/internal/secret"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
)

type k8sOpts struct {
	kube.Options
	backends    *backend.Registry // the kinds of database a run may target
	dsnSecret   string
	runAsSecret string
	kind        string
	startAt     string
	startIn     time.Duration
	out         string
	restart     bool
}

func newK8sCmd(env *clikit.Env, backends *backend.Registry) *cobra.Command {
	o := &k8sOpts{backends: backends}
	cmd := &cobra.Command{
		Use:   "k8s SCENARIO.yaml --shards N [-- RUN_FLAGS...]",
		Short: "Print a Kubernetes Indexed Job that runs a scenario as N shards",
		Long: `Print the manifests that run one scenario on Kubernetes as N shards: a
ConfigMap holding the scenario, every script and SQL file it names and a
start time, a PersistentVolumeClaim for the results (unless --claim names
one, or --results log), and an Indexed Job (completionMode: Indexed,
parallelism = completions = N) whose pod i runs

  firedrill run SCENARIO --shard i/N --start-at T --out /firedrill/runs/job-<uid>/shard-i

so that every shard drives its share of each workload's clients and rate
from the same moment T against the same server. Nothing is sent to a
cluster: apply the output with kubectl.

T is computed when the pods start, so the same file can be applied again
later (after deleting the finished Job): each shard marks itself ready on
the run volume (ReadWriteMany) under its Job's UID and waits for all N
marks (--barrier-timeout, else it exits 98 and fails the Job); all start
at the ConfigMap's start time (--start-at, or now + --start-in) or, when
that has passed or comes too soon, 10 s after the last mark. Each shard's
run directory stays on the volume. With --results log there is no volume:
the ConfigMap's start time is the only one the shards share, a shard that
finds it passed exits 98 ('firedrill k8s ... --restart' prints the
ConfigMap with a new one, to apply before the Job), and each shard prints
its run directory as a base64 tarball at the end of its log, which log
rotation may cut. The Job fails at the first failed shard (backoffLimit 0)
and past a deadline (activeDeadlineSeconds: start, barrier, duration and a
quarter of an hour), and the comment at the top of the output waits for it
to complete or fail, then says how to collect the run directories and
merge them with 'firedrill merge'.

All shards must reach one server: the target is the scenario's target.dsn
(without a password) or, better, --dsn-secret NAME[:KEY], a Secret's key
(default key "dsn") the pods read into $FIREDRILL_DSN and pass as --dsn, so
no password is in the manifests. A scenario whose target is an embedded
throwaway server is refused: each pod would rehearse against its own.
Files outside the scenario's directory cannot travel in the ConfigMap.
The image must hold firedrill, sh, date (GNU), tar and base64 (--image):
the repository's Dockerfile builds one, with the database clients a shell
event may call.

Flags after -- go to every pod's 'firedrill run' as given, and are checked
here as run checks them: --allow-outside-schema, --allow-shell, --run-as.
A confined account made by hand for a server whose --dsn may not make one
('firedrill grant') reaches the pods as --run-as-secret NAME[:KEY], a
Secret's key (default key "dsn") they pass as --run-as; a --run-as after --
that holds a password is refused, as it would land in the manifests.`,
		Example: `  firedrill k8s stock.yaml --shards 4 --dsn-secret stage-db --image registry.example/firedrill:0.1 > job.yaml
  kubectl apply -f job.yaml
  firedrill k8s stock.yaml --shards 8 --dsn-secret stage-db:url --claim firedrill-runs --start-in 5m -- --allow-outside-schema
  firedrill k8s stock.yaml --shards 4 --dsn-secret stage-db --run-as-secret stage-db-runner`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var runArgs []string
			if at := cmd.ArgsLenAtDash(); at >= 0 {
				args, runArgs = args[:at], args[at:]
			}
			if len(args) != 1 {
				return clikit.WithCode(clikit.ExitUsage, fmt.Errorf("k8s takes one scenario file (got %d); example: firedrill k8s stock.yaml --shards 4 --dsn-secret stage-db", len(args)))
			}
			o.RunArgs = runArgs
			return o.run(env, args[0], time.Now())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Shards, "shards", 0, "number of shards, one pod each (required)")
	f.StringVar(&o.Image, "image", "firedrill:"+clikit.Version, "container image holding firedrill, sh, date, tar and base64 (the repository's Dockerfile)")
	f.StringVar(&o.Name, "name", "", "name of the Job and ConfigMap (default: firedrill-<scenario name>)")
	f.StringVar(&o.Namespace, "namespace", "", "namespace of the Job and ConfigMap (default: kubectl's)")
	f.StringVar(&o.dsnSecret, "dsn-secret", "", "Secret NAME[:KEY] (default key dsn) holding the target's connection URL")
	f.StringVar(&o.runAsSecret, "run-as-secret", "", "Secret NAME[:KEY] (default key dsn) holding the URL of a confined account made by hand, passed to run as --run-as")
	f.StringVar(&o.kind, "kind", "", "kind of the server behind --dsn-secret when the scenario has no target.kind (postgres, mariadb, redis)")
	f.StringVar(&o.Results, "results", kube.ResultsVolume, "where the run directories go: volume (a ReadWriteMany volume, which also holds the start barrier) or log (each pod's log)")
	f.StringVar(&o.Claim, "claim", "", "an existing PersistentVolumeClaim (ReadWriteMany) for the run volume (default: the manifests make <name>-runs)")
	f.StringVar(&o.Storage, "storage", "1Gi", "size of the run volume the manifests make")
	f.StringVar(&o.StorageClass, "storage-class", "", "StorageClass of the run volume the manifests make (default: the cluster's; it must offer ReadWriteMany)")
	f.DurationVar(&o.BarrierTimeout, "barrier-timeout", 10*time.Minute, "how long a shard waits for all the others to be ready before it fails the Job")
	f.BoolVar(&o.restart, "restart", false, "print only the ConfigMap, with a new start time (--start-at or now + --start-in), to apply before applying the Job again")
	f.StringVar(&o.startAt, "start-at", "", "when all shards start, RFC 3339 (default: now + --start-in)")
	f.DurationVar(&o.startIn, "start-in", 2*time.Minute, "time from now for the pods to be scheduled and pull the image before the common start")
	f.StringVar(&o.CPU, "cpu", "", "CPU request and limit of each pod (e.g. 2); a load client wants whole cores")
	f.StringVar(&o.Memory, "memory", "", "memory request and limit of each pod (e.g. 1Gi)")
	f.StringVarP(&o.out, "output", "o", "-", "file to write the manifests to (- for stdout)")
	return cmd
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

func (o *k8sOpts) run(env *clikit.Env, file string, now time.Time) error {
	usage := func(format string, a ...any) error {
		return clikit.WithCode(clikit.ExitUsage, fmt.Errorf(format, a...))
	}
	if o.Shards < 1 {
		return usage("--shards N is required: how many pods share the load (e.g. --shards 4)")
	}
	if o.startAt != "" {
		t, err := time.Parse(time.RFC3339, o.startAt)
		if err != nil {
			return usage("--start-at %q: want RFC 3339, e.g. %s", o.startAt, now.Add(5*time.Minute).UTC().Format(time.RFC3339))
		}
		if !t.After(now) {
			return usage("--start-at %s has passed; give a time far enough ahead for the pods to start", o.startAt)
		}
		o.StartAt = t
	} else {
		if o.startIn < 10*time.Second {
			return usage("--start-in %s: pods need time to be scheduled and start; give at least 10s", o.startIn)
		}
		o.StartAt = now.Add(o.startIn).Truncate(time.Second)
	}
	o.DSNSecret, o.DSNKey = secretKey(o.dsnSecret)
	o.RunAsSecret, o.RunAsKey = secretKey(o.runAsSecret)
	runAs, runAsGiven := argValue(o.RunArgs, "--run-as")
	switch {
	case runAsGiven && o.RunAsSecret != "":
		return usage("--run-as after -- and --run-as-secret both name the account; give one")
	case runAsGiven && secret.Redact(runAs) != runAs:
		return usage("--run-as after -- holds a password, which would land in the Job's manifest; move the URL to a Secret and give --run-as-secret NAME[:KEY]")
	}

	reg := o.backends
	opts := reg.ScenarioOptions()
	if o.kind != "" {
		if _, ok := reg.Lookup(o.kind); !ok {
			return usage("--kind %s is not known (known: %s)", o.kind, strings.Join(reg.Kinds(), ", "))
		}
		opts.Kind = o.kind
	}
	sc, err := scenario.Load(file, opts)
	if err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	dsn := sc.Target.DSN
	switch {
	case o.DSNSecret == "" && dsn == "":
		return usage("%s: the target is a throwaway server, so each pod would rehearse against its own; name the shared server with --dsn-secret NAME[:KEY] (a Secret's key holding its URL) or target.dsn", file)
	case dsn != "" && secret.Redact(dsn) != dsn:
		return usage("%s: target.dsn holds a password, which would land in the ConfigMap; move the URL to a Secret and give --dsn-secret NAME[:KEY]", file)
	case o.DSNSecret != "":
		dsn, err = placeholderDSN(reg, sc, o.kind)
		if err != nil {
			return clikit.WithCode(clikit.ExitUsage, err)
		}
	}
	if o.RunAsSecret != "" {
		// Only its kind matters to the checks: the target's, whichever
		// way the target is named (Validate reports a target it cannot
		// resolve).
		if be, err := reg.Resolve(sc, dsn); err == nil {
			if runAs, err = placeholderDSN(reg, sc, be.Kind()); err != nil {
				return clikit.WithCode(clikit.ExitUsage, err)
			}
		}
	}
	if err := runner.Validate(sc, runner.Options{Backends: reg, DSN: dsn, RunAs: runAs, AllowShell: hasArg(o.RunArgs, "--allow-shell"), AllowOutsideSchema: hasArg(o.RunArgs, "--allow-outside-schema")}); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	if o.Name == "" {
		o.Name = strings.Trim(nonName.ReplaceAllString(strings.ToLower("firedrill-"+sc.Name), "-"), "-")
		if len(o.Name) > 52 {
			o.Name = strings.TrimRight(o.Name[:52], "-")
		}
	}
	if err := o.files(sc); err != nil {
		return clikit.WithCode(clikit.ExitUsage, err)
	}
	o.Duration = sc.Duration
	if o.Results != kube.ResultsLog && o.Claim == "" {
		o.Claim, o.NewClaim = o.Name+"-runs", true
	}
	manifests := kube.Manifests
	if o.restart {
		manifests = kube.RestartConfigMap
	}
	out, err := manifests(o.Options)
	if err != nil {
		return usage("%v", err)
	}
	if o.out == "-" {
		_, err = env.Stdout.Write(out)
		return err
	}
	if err := os.WriteFile(o.out, out, 0o644); err != nil {
		return err
	}
	if o.restart {
		fmt.Fprintf(env.Stderr, "wrote %s: ConfigMap %s, its shards starting at %s\n", o.out, o.Name, o.StartAt.UTC().Format(time.RFC3339))
		return nil
	}
	fmt.Fprintf(env.Stderr, "wrote %s: ConfigMap and Job %s, %d shards starting at %s\n", o.out, o.Name, o.Shards, o.StartAt.UTC().Format(time.RFC3339))
	return nil
}

// files reads the scenario and every file it names into the ConfigMap's
// files, refusing what cannot travel: a file outside the scenario's
// directory, and a password in any of them.
func (o *k8sOpts) files(sc *scenario.Scenario) error {
	o.Scenario = filepath.Base(sc.File)
	o.Files = map[string][]byte{o.Scenario: sc.Source}
	for _, use := range sc.Files {
		rel := filepath.ToSlash(filepath.Clean(use.File))
		if filepath.IsAbs(use.File) || rel == ".." || strings.HasPrefix(rel, "../") {
			return &scenario.Error{File: sc.File, Pos: use.Pos, Msg: fmt.Sprintf("%q is outside the scenario's directory, so it cannot travel in the ConfigMap", use.File),
				Hint: "copy it beside the scenario (or below) and name it by a relative path"}
		}
		data, err := os.ReadFile(sc.Resolve(use.File))
		if err != nil {
			return &scenario.Error{File: sc.File, Pos: use.Pos, Msg: err.Error()}
		}
		o.Files[rel] = data
	}
	for name, data := range o.Files {
		if secret.Redact(string(data)) != string(data) {
			return fmt.Errorf("%s holds a password, which would land in the ConfigMap: move it to a Secret (--dsn-secret)", filepath.Join(filepath.Dir(sc.File), name))
		}
	}
	return nil
}

// placeholderDSN names a given server of the scenario's kind, for
// checking the scenario as run will (a given server refuses restarts);
// it is never contacted.
func placeholderDSN(reg *backend.Registry, sc *scenario.Scenario, kind string) (string, error) {
	if sc.Target.Kind != "" {
		kind = sc.Target.Kind
	}
	if kind == "" {
		kind = reg.Default()
	}
	b, ok := reg.Lookup(kind)
	if !ok {
		return "", fmt.Errorf("target kind %s is not known (known: %s)", kind, strings.Join(reg.Kinds(), ", "))
	}
	s, ok := b.(backend.Schemed)
	if !ok || len(s.Schemes()) == 0 {
		return "", fmt.Errorf("a %s server cannot be named by URL", kind)
	}
	return s.Schemes()[0] + "://k8s-secret/firedrill", nil
}

// secretKey splits --dsn-secret's NAME[:KEY]; the key defaults to "dsn".
func secretKey(flag string) (name, key string) {
	if flag == "" {
		return "", ""
	}
	name, key, ok := strings.Cut(flag, ":")
	if !ok {
		key = "dsn"
	}
	return name, key
}

// argValue finds a flag's value among run's arguments, as "--flag V" or
// "--flag=V".
func argValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		switch {
		case a == flag && i+1 < len(args):
			return args[i+1], true
		case strings.HasPrefix(a, flag+"="):
			return a[len(flag)+1:], true
		}
	}
	return "", false
}

func hasArg(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}
