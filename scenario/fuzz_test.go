package scenario_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
)

// FuzzParse feeds the loader arbitrary files: it must never panic, and it
// either returns a scenario that holds its invariants or Errors that
// each say where and what.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"good", "bad"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for _, seed := range fuzzSeeds {
		f.Add([]byte(seed))
	}
	// Scripts and SQL files are found next to the good example, so that
	// inputs derived from it reach the script parser.
	file := filepath.Join("testdata", "good", "fuzz.yaml")
	// Variables in the inputs expand: D to a duration, ML to two lines,
	// E to nothing; any other is unset.
	opts := kinds.Registry().ScenarioOptions()
	opts.LookupEnv = func(name string) (string, bool) {
		v, ok := map[string]string{"D": "1m", "ML": "a\nb: c", "E": ""}[name]
		return v, ok
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(file, data, opts)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error is a %T (%v), want non-empty Errors", err, err)
			}
			// YAML breaks lines at \n, \r\n and a lone \r.
			lines := bytes.Count(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\n")) + bytes.Count(data, []byte("\r")) + 1
			for _, e := range errs {
				if e.Msg == "" || e.Pos.Line < 0 || e.Pos.Col < 0 {
					t.Fatalf("malformed error %#v", e)
				}
				if e.File == file && e.Pos.Line > lines+1 {
					t.Fatalf("error %v is past the file's %d lines: a position of the expanded text", e, lines)
				}
			}
			return
		}
		if s.Duration <= 0 || s.SampleInterval < MinSampleInterval || s.SampleInterval > MaxSampleInterval {
			t.Fatalf("duration %v, sample interval %v", s.Duration, s.SampleInterval)
		}
		if len(s.Workloads) == 0 {
			t.Fatal("a scenario without workloads")
		}
		for _, w := range s.Workloads {
			if w.Name == "" || len(w.Scripts) == 0 || w.Mode == "" || w.MaxTries < 1 || w.Scale < 1 {
				t.Fatalf("workload not filled in: %+v", w)
			}
			if start, stop := w.Window(s.Duration); start > stop || stop > s.Duration {
				t.Fatalf("workload %s window %v..%v in a %v run", w.Name, start, stop, s.Duration)
			}
			if !w.Open() && len(w.Stages) == 0 && w.MaxClients() < 1 {
				t.Fatalf("workload %s has no clients", w.Name)
			}
		}
		for _, e := range s.Events {
			if e.Name == "" || e.At >= s.Duration || e.End() > s.Duration {
				t.Fatalf("event %+v in a %v run", e, s.Duration)
			}
		}
		for _, th := range s.Thresholds {
			if th.Op == "" || th.Kind == 0 {
				t.Fatalf("threshold not filled in: %+v", th)
			}
		}
	})
}

// fuzzSeeds reach the corners the example files do not: aliases, merge
// keys, block scalars, documents and odd scalars.
var fuzzSeeds = []string{
	"",
	"---\n...\n",
	"[]",
	"name: a\nworkloads: [{name: w, scripts: [select-only], clients: 1}]\nduration: 1\n",
	// A workload that falls back from one target to another.
	"name: a\ntargets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads:\n  - {name: w, target: cache, clients: 1, scripts: [{inline: \"GET firedrill:k\"}],\n     fallback: {target: db, after: 20ms, scripts: [{inline: \"SELECT 1;\"}]}}\n",
	"x: &a {<<: *a}\n",
	"a: &a [*a, *a]\nname: *a\n",
	"w: &w {name: w, scripts: [{inline: |\n    \\set x 1\n    SELECT :x;\n}], clients: 1, stop: 1s}\nname: n\nworkloads: [*w, {<<: *w, name: v}]\n",
	"name: n\nduration: 1m\nworkloads: [{name: w, scripts: [multixact.sql@3, other.sql], rate: 1e3, stages: [{duration: 5, rate: 1}]}]\nthresholds: {w.p99: '< 1ms', db.slru_hit_rate_min.xact: '> 1%', finding.x: present}\n",
	"name: n\nduration: 10s\nworkloads: [{name: w, scripts: [select-only], clients: 1}]\nevents: [{kind: disk_pressure, at: 0, size: 1GiB, rate: 1e3/s}, {kind: terminate, at: 1, workload: w}]\n",
	"name: n\nduration: 1m\ntargets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads: [{name: w, target: db, scripts: [select-only], clients: 1}]\nthresholds: {db.db.slru_hit_rate_min.transaction: '> 1%', cache.db.x: '== 0', db.deadlocks: '== 0', shard.db.rollbacks: '== 0', w.p99: '< 1ms'}\n",
	"!!binary aGVsbG8=\n",
	"? [a]\n: b\n",
	"name: \"\\xff\"\n",
	"name: ${N:-n}\nduration: ${D}\nworkloads: [{name: w, scripts: [select-only], clients: ${C:-2}}]\n",
	"name: n\ndescription: ${ML}\nduration: $${D}\nworkloads: [{name: w${E}, scripts: [{inline: \"SELECT $$x$$\"}], clients: 1}]\n",
	"name: ${\nx: ${1}\n",
	// Redis's setup.keys: strings beside every type of collection.
	"name: n\nduration: 1s\ntarget: {kind: redis}\nsetup: {keys: {count: 3, size: 1KiB, lists: {count: 1, length: 9, size: 2}, hashes: {count: 2, fields: 3}, sets: {count: 1, members: 100, size: 3}, zsets: {count: 1, members: 5}, streams: {count: 1, entries: 4}}}\nworkloads: [{name: w, scripts: [cache.redis], clients: 1}]\n",
	// The other dialects, their kind decided after the workloads are read.
	"name: n\nduration: 1s\nworkloads: [{name: w, scripts: [cache.redis, {inline: \"GET firedrill:k \\\\gset v\"}], clients: 1}]\ntarget: {kind: redis}\n",
	"name: n\nduration: 1s\nworkloads: [{name: w, scripts: [stock.sql, {inline: \"SELECT `a`; # it's\"}], clients: 1}]\ntarget: {dsn: \"mysql://a@127.0.0.1:1/d\"}\n",
}
