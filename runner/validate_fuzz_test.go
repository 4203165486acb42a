package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
)

// FuzzValidatePartial: validate runs every check on what of a file could
// be read (scenario.Options.Partial), a scenario that may lack what its
// problems are about; no input may make a check panic, and every problem
// gathered has a message.
func FuzzValidatePartial(f *testing.F) {
	for _, dir := range []string{"good", "bad"} {
		files, err := filepath.Glob(filepath.Join("..", "scenario", "testdata", dir, "*.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data, "")
		}
	}
	f.Add([]byte("name: x\ntarget: {kind: redis, settings: {maxmemory: 1mb}}\nduration: 1s\nworkloads:\n  - {name: w, clientz: 1, scripts: [{inline: \"SETT k :v\"}]}\nevents:\n  - {kind: shell, at: 0s, command: x}\nthresholds: {db.deadlocks: \"< 1\"}\n"), "redis://127.0.0.1:1/0")
	f.Add([]byte("name: x\ntargets: {db: {kind: postgres}}\nduration: 1s\nworkloads:\n  - {name: w, target: dv, scripts: [{inline: \"SELECT :x;\"}]}\n"), "postgres://a@127.0.0.1:1/d")
	reg := kinds.Registry()
	file := filepath.Join("..", "scenario", "testdata", "good", "fuzz.yaml")
	f.Fuzz(func(t *testing.T, data []byte, dsn string) {
		opts := reg.ScenarioOptionsFor(dsn)
		opts.Partial = true
		sc, err := scenario.Parse(file, data, opts)
		if sc == nil {
			return
		}
		all := scenario.Gather(file, err, Validate(sc, Options{Backends: reg, DSN: dsn}))
		if errs, ok := all.(scenario.Errors); ok {
			for _, e := range errs {
				if e.Msg == "" {
					t.Fatalf("a problem without a message: %#v", e)
				}
			}
		}
	})
}
