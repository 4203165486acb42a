package script_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/script"
)

// reportScripts are custom scripts whose per-command report lines (-r)
// must match pgbench's exactly. Each runs cleanly once on a fresh
// database initialised with pgbench -i.
var reportScripts = []struct {
	name  string
	mode  string // pgbench -M
	src   string
	setup string // SQL run before, if any
}{
	{
		// Everything at once: comments, quotes, continuations, \gset on the
		// same line, compound commands, psql-test syntax, shell commands.
		name: "kitchen-sink",
		mode: "simple",
		src: `-- leading comment
\set x 1
\set y 2 + \
  3
SELECT 1 -- trailing comment
 , 2;
/* block */ SELECT :x, ':y', $$;$$, E'\';' ;
SELECT 3 as three \gset
select 'a'
  'b' as c \; select 4 as d \aset
select :{?x} as q, :x::int as r;
\sleep 1 us
\setshell zz echo 5
\shell true :x ::y
SELECT 5 \sleep 0 ms
SELECT (1
);;
SELECT 7
`,
	},
	{
		// Conditionals, nested, with every branch kind.
		name: "conditionals",
		mode: "extended",
		src: `\set c random(0, 2)
\if :c = 0
  SELECT 'zero';
\elif :c = 1
  \if true
    SELECT 'one';
  \endif
\else
  SELECT 'two'
  ;
\endif
`,
	},
	{
		// Long lines are cut at 127 bytes; dollar quotes and a function
		// body keep their semicolons.
		name: "long-and-bodies",
		mode: "simple",
		src: "SELECT '" + strings.Repeat("long ", 40) + "' AS long_text;\n" +
			"DO $body$ BEGIN PERFORM 1; END $body$;\n" +
			"CREATE OR REPLACE FUNCTION pg_temp.fd_f() RETURNS int LANGUAGE sql\nBEGIN ATOMIC SELECT 1; SELECT 2; END;\n" +
			"SELECT pg_temp.fd_f()\n",
	},
	{
		// Windows line ends.
		name: "crlf",
		mode: "prepared",
		src:  "\\set aid random(1, 10)\r\nSELECT abalance\r\nFROM pgbench_accounts WHERE aid = :aid;\r\n\\sleep 1 ms\r\n",
	},
	{
		// A pipeline (extended protocol only).
		name: "pipeline",
		mode: "extended",
		src: `\set aid random(1, 100000 * :scale)
\startpipeline
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT 1;
\endpipeline
`,
	},
}

// TestReportTextMatchesPgbench runs scripts through the real pgbench -r and
// checks that Command.Text is exactly what pgbench prints per command.
func TestReportTextMatchesPgbench(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	pgbench, err := pgbenchPath()
	if err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inst, err := postgres.Start(ctx, postgres.Options{})
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	defer func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop PostgreSQL: %v", err)
		}
	}()
	conn := []string{"-h", inst.Host(), "-p", strconv.Itoa(inst.Port()), "-U", inst.User()}
	if out, err := exec.CommandContext(ctx, pgbench, append(slices.Clone(conn), "-i", "-q", "-s", "1", inst.Database())...).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}

	dir := t.TempDir()
	type run struct {
		name   string
		args   []string
		script *script.Script
	}
	var runs []run
	for _, info := range script.BuiltinNames() {
		s, err := script.Builtin(info.Name, script.NewSymbols())
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run{name: info.Name, args: []string{"-b", info.Name}, script: s})
	}
	for _, rs := range reportScripts {
		path := filepath.Join(dir, rs.name+".sql")
		if err := os.WriteFile(path, []byte(rs.src), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := script.Parse(path, []byte(rs.src), script.NewSymbols())
		if err != nil {
			t.Fatalf("%s: %v", rs.name, err)
		}
		runs = append(runs, run{name: rs.name, args: []string{"-M", rs.mode, "-f", path}, script: s})
	}

	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			args := append(slices.Clone(conn), "-n", "-t", "1", "-r")
			args = append(append(args, r.args...), inst.Database())
			out, err := exec.CommandContext(ctx, pgbench, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			got, err := reportTexts(string(out))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var want []string
			for _, c := range r.script.Commands {
				want = append(want, c.Text)
			}
			if !slices.Equal(got, want) {
				t.Errorf("command texts differ from pgbench -r:\n pgbench %q\n ours    %q", got, want)
			}
			if !strings.Contains(string(out), "transaction type: "+r.script.Name+"\n") {
				t.Errorf("pgbench's transaction type is not %q:\n%s", r.script.Name, out)
			}
		})
	}
}

// reportLine is the start of one command's line in pgbench's -r report:
// "   %11.3f  %10d  " (one space before the text in newer versions) then
// the command's text.
var reportLine = regexp.MustCompile(`^   [ 0-9.]{11}  [ 0-9]{10} {1,2}`)

// reportTexts extracts the command texts from pgbench -r output; a text
// spanning lines (a continued meta-command) is joined back with newlines.
func reportTexts(out string) ([]string, error) {
	_, report, ok := strings.Cut(out, "statement latencies in milliseconds and failures:\n")
	if !ok {
		return nil, fmt.Errorf("no per-command report in pgbench output")
	}
	var texts []string
	for _, line := range strings.Split(strings.TrimSuffix(report, "\n"), "\n") {
		if loc := reportLine.FindStringIndex(line); loc != nil {
			texts = append(texts, line[loc[1]:])
			continue
		}
		if len(texts) == 0 {
			return nil, fmt.Errorf("unexpected report line %q", line)
		}
		texts[len(texts)-1] += "\n" + line
	}
	return texts, nil
}

// pgbenchPath locates a pgbench binary: on PATH, else Debian's directories.
func pgbenchPath() (string, error) {
	if path, err := exec.LookPath("pgbench"); err == nil {
		return path, nil
	}
	if matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench"); len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("no pgbench on PATH or in /usr/lib/postgresql/*/bin")
}
