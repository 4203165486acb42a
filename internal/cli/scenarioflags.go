package cli

import (
	"github.com/spf13/pflag"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/scenario"
)

// scenarioFlags are the flags that change a scenario as it is loaded, so
// that one file serves a CI job at several sizes: --set KEY=VALUE.
// ${NAME} in the file comes from the environment (scenario/README.md).
type scenarioFlags struct {
	sets []string
}

// add puts the flags on a command.
func (s *scenarioFlags) add(f *pflag.FlagSet) {
	f.StringArrayVar(&s.sets, "set", nil, "set a scenario key `KEY=VALUE`, as written in the file (repeatable): --set workloads.oltp.clients=64, --set duration=30s, --set target.settings.work_mem=64MB; list items by name or index")
}

// options adds the flags and the environment to the options a scenario
// is loaded with.
func (s *scenarioFlags) options(env *clikit.Env, opts scenario.Options) (scenario.Options, error) {
	opts.LookupEnv = env.LookupEnv
	for _, arg := range s.sets {
		o, err := scenario.ParseOverride(arg)
		if err != nil {
			return opts, err
		}
		opts.Overrides = append(opts.Overrides, o)
	}
	return opts, nil
}
