package script

import (
	"reflect"
	"testing"
)

func TestUnsetVariables(t *testing.T) {
	t.Parallel()
	redis := Dialect{Name: "redis", Lines: true}
	tests := []struct {
		name    string
		dialect Dialect
		scripts []string
		preset  []string
		want    []string // "name@line near"
	}{
		// The typo: :idd read, :id set.
		{name: "typo", scripts: []string{"\\set id random(1, 10)\nSELECT * FROM t WHERE id = :idd;\n"}, want: []string{"idd@2 id"}},
		{name: "all set", scripts: []string{"\\set id random(1, 10)\nSELECT * FROM t WHERE id = :id;\n"}},
		// pgbench's automatic variables are always set.
		{name: "automatic", scripts: []string{"SELECT :client_id, :scale;\n"}},
		// Another script of the workload sets it (variables are the client's).
		{name: "other script", scripts: []string{"\\set x 1\n", "SELECT :x;\n"}},
		// defines: preset it.
		{name: "defines", scripts: []string{"SELECT :region;\n"}, preset: []string{"region"}},
		// A SQL \gset stores the query's columns: any name with its prefix.
		{name: "gset prefix", scripts: []string{"SELECT 1 AS n \\gset p_\nSELECT :p_n, :q;\n"}, want: []string{"q@2 "}},
		// \setshell sets, \sleep and \if read.
		{name: "meta", scripts: []string{"\\setshell s echo 1\n\\sleep :nap ms\n\\if :cond > 0\n\\endif\nSELECT :s;\n"}, want: []string{"nap@2 ", "cond@3 "}},
		// Each variable once, at its first use.
		{name: "once", scripts: []string{"SELECT :v;\nSELECT :v;\n"}, want: []string{"v@1 "}},
		// Redis: \gset names the variables; arguments read them.
		{name: "redis", dialect: redis, scripts: []string{"GET k \\gset cached\nSET k::cached :payload\n"}, want: []string{"payload@2 "}},
		// Expressions read through functions and CASE.
		{name: "expr", scripts: []string{"\\set a abs(:b) + CASE WHEN :c THEN 1 ELSE :d END\n"}, want: []string{"b@1 ", "c@1 ", "d@1 "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			syms := NewSymbols()
			var scripts []*Script
			for i, src := range tt.scripts {
				sc, err := ParseDialect("s"+string(rune('0'+i)), []byte(src), syms, tt.dialect)
				if err != nil {
					t.Fatal(err)
				}
				scripts = append(scripts, sc)
			}
			preset := func(name string) bool {
				for _, p := range tt.preset {
					if p == name {
						return true
					}
				}
				return false
			}
			var got []string
			for _, u := range UnsetVariables(scripts, syms, preset) {
				got = append(got, u.Name+"@"+itoa(u.Pos.Line)+" "+u.Near)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

func TestUnknownCommands(t *testing.T) {
	t.Parallel()
	d := Dialect{Name: "redis", Lines: true, Commands: NewCommands("get", "SET", "INCRBY", "MULTI", "EXEC")}
	src := "SETT k 1\nget k\nINCRBT k 1\nMULTI\nEXEC\nJSON.SET k $ 1\n:cmd k\nFROBNICATE k\n"
	sc, err := ParseDialect("c.redis", []byte(src), NewSymbols(), d)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range UnknownCommands(sc, d) {
		got = append(got, e.Error())
	}
	want := []string{
		`c.redis:1:1: unknown command "SETT"; did you mean SET?`,
		`c.redis:3:1: unknown command "INCRBT"; did you mean INCRBY?`,
		// a module's dotted command and a name in a variable pass
		`c.redis:8:1: unknown command "FROBNICATE"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// Without a table every name passes.
	if errs := UnknownCommands(sc, Dialect{Name: "redis", Lines: true}); len(errs) != 0 {
		t.Errorf("no table: %v", errs)
	}
}
