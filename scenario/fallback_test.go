package scenario_test

import (
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
)

// cacheAside is a read through a cache that falls back to the database.
const cacheAside = `name: x
duration: 10s
targets: {db: {kind: postgres}, cache: {kind: redis}}
workloads:
  - name: reads
    target: cache
    clients: 2
    scripts: [{inline: "GET firedrill:k"}]
    fallback:
      target: db
      after: 20ms
      scripts: [{inline: "SELECT 1;"}]
`

// A workload's fallback reads naturally, and the fallback's target sees
// the load it puts on it.
func TestFallbackLoad(t *testing.T) {
	t.Parallel()
	sc, err := Parse("x.yaml", []byte(cacheAside), kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	fb := sc.Workloads[0].Fallback
	if fb == nil || fb.Target != "db" || fb.After != 20*time.Millisecond || len(fb.Scripts) != 1 || fb.Pos.Line != 10 {
		t.Fatalf("fallback %+v", fb)
	}
	db := sc.ForTarget("db")
	if len(db.Workloads) != 1 || db.Workloads[0].Name != "reads" || db.Workloads[0].Target != "db" ||
		db.Workloads[0].Scripts[0].Inline != "SELECT 1;" || db.Workloads[0].Clients != 2 {
		t.Errorf("db's view: %+v", db.Workloads)
	}
	if cache := sc.ForTarget("cache"); len(cache.Workloads) != 1 || cache.Workloads[0].Fallback == nil {
		t.Errorf("cache's view: %+v", cache.Workloads)
	}
}

// Mistakes in a fallback, each at its place.
func TestFallbackErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, old, new, want string }{
		{name: "an unknown target", old: "target: db", new: "target: dv",
			want: `x.yaml:10:15: workload "reads" fallback: no target "dv"; did you mean "db"?`},
		{name: "the workload's own target", old: "target: db", new: "target: cache",
			want: `x.yaml:10:15: workload "reads" fallback: target "cache" is the workload's own`},
		// A script that does not parse (a \set without its expression).
		{name: "a script that does not parse", old: `"SELECT 1;"`, new: `"\\set id ("`,
			want: `x.yaml:12:26: inline script, line 1, column 10: syntax error at end of expression`},
		{name: "no scripts", old: "      scripts: [{inline: \"SELECT 1;\"}]\n", new: "",
			want: `x.yaml:10:7: workload "reads" fallback: missing scripts`},
		{name: "after is not a duration", old: "after: 20ms", new: "after: soon",
			want: "x.yaml:11:14: after:"},
		{name: "an unknown key", old: "after: 20ms", new: "afer: 20ms",
			want: "x.yaml:11:7: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(cacheAside, tt.old, tt.new, 1)
			_, err := Parse("x.yaml", []byte(text), kinds.Registry().ScenarioOptions())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
		})
	}
	// The fallback's scripts are read in its target's dialect: an
	// unterminated quote, which PostgreSQL's dialect leaves to the
	// server, is an error in Redis's.
	toCache := "name: x\nduration: 10s\ntargets: {db: {kind: postgres}, cache: {kind: redis}}\nworkloads:\n" +
		"  - {name: w, target: db, clients: 1, scripts: [select-only], fallback: {target: cache, scripts: [{inline: 'SET k \"open'}]}}\n"
	if _, err := Parse("x.yaml", []byte(toCache), kinds.Registry().ScenarioOptions()); err == nil || !strings.Contains(err.Error(), "x.yaml:5:115: unterminated quoted string") {
		t.Errorf("a fallback script in the wrong dialect: %v", err)
	}
	// With one system there is nothing to fall back to.
	one := "name: x\nduration: 10s\nworkloads:\n  - {name: w, clients: 1, scripts: [select-only], fallback: {target: db, scripts: [select-only]}}\n"
	if _, err := Parse("x.yaml", []byte(one), kinds.Registry().ScenarioOptions()); err == nil || !strings.Contains(err.Error(), "x.yaml:4:61: workload \"w\": fallback: needs a second target") {
		t.Errorf("fallback with one system: %v", err)
	}
}
