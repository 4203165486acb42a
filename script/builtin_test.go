package script

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// renderScript writes everything the engine reads from a parsed script, in
// a stable text form for golden files.
func renderScript(s *Script, syms *Symbols) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nweight: %d\n", s.Name, s.Weight)
	for i, c := range s.Commands {
		fmt.Fprintf(&b, "\n[%d] %s at %s\ntext: %q\n", i, c.Kind, c.Pos, c.Text)
		switch c.Kind {
		case KindSet:
			fmt.Fprintf(&b, "var: %s\n", syms.Name(c.Var))
		case KindSQL:
			fmt.Fprintf(&b, "query: %q\n", c.SQL.Query)
			for j, p := range c.SQL.Params {
				fmt.Fprintf(&b, "param $%d: %s\n", j+1, syms.Name(p))
			}
			for _, part := range c.SQL.Parts {
				if part.Var == NoVar {
					fmt.Fprintf(&b, "part: %q\n", part.Text)
				} else {
					fmt.Fprintf(&b, "part: var %s (%q)\n", syms.Name(part.Var), part.Text)
				}
			}
			fmt.Fprintf(&b, "compound: %v\n", c.SQL.Compound)
		}
	}
	return b.String()
}

func TestBuiltinGolden(t *testing.T) {
	t.Parallel()
	for _, info := range BuiltinNames() {
		t.Run(info.Name, func(t *testing.T) {
			t.Parallel()
			syms := NewSymbols()
			s, err := Builtin(info.Name, syms)
			if err != nil {
				t.Fatal(err)
			}
			got := renderScript(s, syms)
			path := filepath.Join("testdata", "builtin-"+info.Name+".golden")
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestBuiltinGolden -update ./script/ to create it)", err)
			}
			if got != string(want) {
				t.Errorf("builtin %s differs from %s:\n%s", info.Name, path, got)
			}
		})
	}
}

func TestBuiltinLookup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg     string
		want    string // Script.Name, or "" for an error
		wantErr string
	}{
		{"tpcb-like", "<builtin: TPC-B (sort of)>", ""},         // full name
		{"tpcb", "<builtin: TPC-B (sort of)>", ""},              // unique prefix
		{"simple", "<builtin: simple update>", ""},              // unique prefix
		{"se", "<builtin: select only>", ""},                    // unique prefix
		{"s", "", "ambiguous builtin name: 2 builtin"},          // two match
		{"", "", "ambiguous builtin name: 3 builtin"},           // every name starts with ""
		{"tpcc", "", `no builtin script found for name "tpcc"`}, // none
		{"list", "", "no builtin script found"},                 // the caller handles list
	}
	for _, tt := range tests {
		s, err := Builtin(tt.arg, NewSymbols())
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Builtin(%q) error = %v, want %q", tt.arg, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("Builtin(%q): %v", tt.arg, err)
		case s.Name != tt.want || s.Weight != 1:
			t.Errorf("Builtin(%q) = %q weight %d, want %q weight 1", tt.arg, s.Name, s.Weight, tt.want)
		}
	}
}

// TestBuiltinMatchesPgbench compares the builtin texts with what the
// installed pgbench shows with --show-script.
func TestBuiltinMatchesPgbench(t *testing.T) {
	t.Parallel()
	pgbench, err := pgbenchBinary()
	if err != nil {
		t.Skip(err)
	}
	for _, info := range BuiltinNames() {
		var stderr bytes.Buffer
		cmd := exec.Command(pgbench, "--show-script="+info.Name)
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s --show-script=%s: %v: %s", pgbench, info.Name, err, stderr.String())
		}
		want := fmt.Sprintf("-- %s: %s\n%s\n", info.Name, info.Desc, info.Source)
		if stderr.String() != want {
			t.Errorf("builtin %s:\n got  %q\n want %q (from pgbench)", info.Name, info.Source, stderr.String())
		}
	}
}

// pgbenchBinary locates a pgbench binary: on PATH, else Debian's directories.
func pgbenchBinary() (string, error) {
	if path, err := exec.LookPath("pgbench"); err == nil {
		return path, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("no pgbench on PATH or in /usr/lib/postgresql/*/bin")
}
