package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/scenario"
)

// loadShapeFlags are flags other load tools have (pgbench, k6, sysbench)
// that firedrill keeps in the scenario instead: the scenario key each
// sets, for the --set that does it.
var loadShapeFlags = map[string]string{
	"clients":         "workloads.<name>.clients",
	"client":          "workloads.<name>.clients",
	"c":               "workloads.<name>.clients",
	"vus":             "workloads.<name>.clients",
	"threads":         "workloads.<name>.clients",
	"connections":     "workloads.<name>.clients",
	"rate":            "workloads.<name>.rate",
	"R":               "workloads.<name>.rate",
	"rps":             "workloads.<name>.rate",
	"duration":        "duration",
	"time":            "duration",
	"T":               "duration",
	"stages":          "workloads.<name>.stages",
	"seed":            "workloads.<name>.seed",
	"random-seed":     "workloads.<name>.seed",
	"mode":            "workloads.<name>.mode",
	"M":               "workloads.<name>.mode",
	"pool":            "workloads.<name>.pool",
	"max-tries":       "workloads.<name>.max_tries",
	"latency-limit":   "workloads.<name>.latency_limit",
	"scale":           "workloads.<name>.scale",
	"s":               "setup.pgbench.scale",
	"sample-interval": "sample_interval",
}

// flagError is the root's cobra flag error function: an unknown flag
// that sets a load shape elsewhere gets a hint to the --set that does it
// here; every flag error says where the command's flags are listed.
// args is the command line, for the value given after the flag.
func flagError(cmd *cobra.Command, err error, args []string, backends *backend.Registry) error {
	msg := err.Error()
	name, value, ok := unknownFlag(msg)
	if ok && value == "" {
		for i, a := range args[:max(len(args)-1, 0)] {
			if (a == "--"+name || a == "-"+name) && !strings.HasPrefix(args[i+1], "-") {
				value = args[i+1]
			}
		}
	}
	if ok && cmd.Flags().Lookup("set") != nil {
		if key, shape := loadShapeFlags[name]; shape {
			if value == "" {
				value = "N"
				if strings.Contains(key, "duration") || strings.HasSuffix(key, "interval") {
					value = "30s"
				}
			}
			set := "--set " + key + "=" + value
			if strings.Contains(key, "<name>") {
				names := workloadNames(args, backends)
				if len(names) == 0 {
					names = []string{"oltp"}
				}
				set = fmt.Sprintf("--set %s=%s (a workload's name, as in --set %s=%s)", key, value, strings.Replace(key, "<name>", names[0], 1), value)
				if len(names) > 1 {
					set += "; the scenario's workloads: " + strings.Join(names, ", ")
				}
			}
			return fmt.Errorf("%s: the load's shape is in the scenario, not in flags: use %s\n'%s --help' lists the flags (--set takes any scenario key)",
				msg, set, cmd.CommandPath())
		}
	}
	return fmt.Errorf("%s\n'%s --help' lists the flags", msg, cmd.CommandPath())
}

// unknownFlag reads pflag's "unknown flag: --clients" and "unknown
// shorthand flag: 'c' in -c5" into the flag's name and an attached value.
func unknownFlag(msg string) (name, value string, ok bool) {
	if rest, found := strings.CutPrefix(msg, "unknown flag: --"); found {
		name, value, _ = strings.Cut(rest, "=")
		return name, value, true
	}
	if rest, found := strings.CutPrefix(msg, "unknown shorthand flag: '"); found {
		name, rest, _ = strings.Cut(rest, "'")
		if _, arg, has := strings.Cut(rest, " in -"); has && len(arg) > len(name) {
			value = strings.TrimPrefix(arg[len(name):], "=")
		}
		return name, value, true
	}
	return "", "", false
}

// workloadNames are the workloads of the first scenario file named on the
// command line, for the hint's example; none when there is no such file
// or it does not load.
func workloadNames(args []string, backends *backend.Registry) []string {
	for _, a := range args {
		if !strings.HasSuffix(a, ".yaml") && !strings.HasSuffix(a, ".yml") {
			continue
		}
		sc, err := scenario.Load(a, backends.ScenarioOptions())
		if err != nil {
			return nil
		}
		var names []string
		for _, w := range sc.Workloads {
			names = append(names, w.Name)
		}
		return names
	}
	return nil
}
