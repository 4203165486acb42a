package timeline

import (
	"fmt"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// workloadInputsFromScenario fills the Defines and Scale of workloads that
// have neither from the run directory's scenario.yaml: a run recorded
// before run.json carried them. The run directory stays the only input;
// readers (the lock-order analysis) see them in the manifest either way.
// A scenario that cannot be read leaves them empty, as a run without
// defines has.
func workloadInputsFromScenario(dir string, workloads []WorkloadInfo) {
	missing := false
	for _, w := range workloads {
		if w.Defines == nil && w.Scale == 0 {
			missing = true
		}
	}
	if !missing {
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, ScenarioFile))
	if err != nil {
		return
	}
	var sc struct {
		Setup struct {
			Pgbench *struct {
				Scale int `yaml:"scale"`
			} `yaml:"pgbench"`
		} `yaml:"setup"`
		Workloads []struct {
			Name    string         `yaml:"name"`
			Defines map[string]any `yaml:"defines"`
			Scale   int            `yaml:"scale"`
		} `yaml:"workloads"`
	}
	if yaml.Unmarshal(b, &sc) != nil {
		return
	}
	for _, sw := range sc.Workloads {
		for i := range workloads {
			w := &workloads[i]
			if w.Name != sw.Name || w.Defines != nil || w.Scale != 0 {
				continue
			}
			if len(sw.Defines) > 0 {
				w.Defines = map[string]string{}
				for k, v := range sw.Defines {
					w.Defines[k] = fmt.Sprint(v)
				}
			}
			w.Scale = sw.Scale
			if w.Scale == 0 && sc.Setup.Pgbench != nil {
				w.Scale = sc.Setup.Pgbench.Scale
			}
		}
	}
}
