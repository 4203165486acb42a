package scenario_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/mariadb/mdbdialect"
	"github.com/firedrill/firedrill/db/postgres/pgdialect"
	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/kinds"
	. "github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

// Scripts of each dialect, in files next to the scenario. Each "bad" one
// is wrong in its own dialect only where the comment says; each "good"
// one holds what only its dialect reads, and fails as PostgreSQL's SQL.
var dialectScripts = map[string]string{
	// Line 2, column 20: the quote is not closed on its line.
	"unterminated.redis": "GET firedrill:a\nSET firedrill:b \"open\n",
	// Line 2: a line of binary junk, whose first word names no command.
	"junk.redis": "PING\n\x01\xff\xfe\x7fGET k\n",
	// FLUSHDB is a Redis command: the dialect reads it (the backend's
	// confinement, not the parser, judges it).
	// As PostgreSQL's SQL, firedrill:k reads the variable k: the \set
	// makes the script good in both readings.
	"good.redis": "\\set k 1\nSET firedrill:k 1\nGET firedrill:k\n",
	// Backticks, a backslash escape and # comments: MySQL's lexing. As
	// PostgreSQL's SQL the quote ends at the backslash, and the \n after
	// it is a meta-command pgbench does not have (line 1, column 36).
	"good.mysql": "SELECT `a` FROM t WHERE b = 'it\\'s \\n'; # don't \\o/\nSELECT 1; -- fine\n",
	// Line 2, column 10: a bad unit, after a # comment that MySQL ends at
	// the line's end; PostgreSQL's SQL reads a quote opened there to the
	// end of the file and parses.
	"bad.mysql": "SELECT 1; # it's\n\\sleep 1 parsec\n",
}

// A workload's scripts are parsed in the dialect of the scenario's kind,
// however the kind is decided (target.kind before or after the workloads,
// target.dsn's scheme, the --dsn's scheme), for files and inline text
// alike, and errors keep the script's file:line:col.
func TestScriptsParseInTheTargetsDialect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range dialectScripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "d.yaml")
	const workloads = "workloads:\n  - name: w\n    clients: 1\n    scripts: [%s]\n"
	tests := []struct {
		name    string
		target  string // a target: line, written before the workloads
		after   string // a target: line, written after them
		dsn     string // the command line's --dsn
		scripts string
		dialect script.Dialect // on success
		want    string         // the error, with the scenario's directory as $D; "" = valid
	}{
		// target.kind after the workloads: the kind is known only once
		// the whole file is read.
		{name: "redis kind after", after: "target: {kind: redis}", scripts: "unterminated.redis",
			want: "$D/unterminated.redis:2:17: unterminated quoted string"},
		{name: "redis kind before", target: "target: {kind: redis}", scripts: "unterminated.redis",
			want: "$D/unterminated.redis:2:17: unterminated quoted string"},
		{name: "redis target.dsn", after: `target: {dsn: "redis://127.0.0.1:1/0"}`, scripts: "unterminated.redis",
			want: "$D/unterminated.redis:2:17: unterminated quoted string"},
		{name: "redis --dsn", dsn: "redis://127.0.0.1:1/0", scripts: "unterminated.redis",
			want: "$D/unterminated.redis:2:17: unterminated quoted string"},
		{name: "rediss --dsn", dsn: "rediss://127.0.0.1:1/0", scripts: "junk.redis",
			want: `$D/junk.redis:2:1: "\x01\xff\xfe\x7fGET" is not a Redis command name`},
		{name: "redis good", dsn: "redis://127.0.0.1:1/0", scripts: "good.redis", dialect: redisdialect.Script()},
		// Inline text: the error is at its place in the scenario file
		// (line 5 holds the scripts; the inline text starts at column
		// 25, so its quote at column 17 is at 41).
		{name: "redis inline", after: "target: {kind: redis}", scripts: `{inline: 'SET firedrill:k "v'}`,
			want: "$D/d.yaml:5:41: unterminated quoted string"},
		{name: "redis inline --dsn", dsn: "redis://127.0.0.1:1/0", scripts: `{inline: 'SET firedrill:k "v'}`,
			want: "$D/d.yaml:5:41: unterminated quoted string"},
		// MySQL's lexing: passes for a MariaDB target, as PostgreSQL's
		// SQL it does not.
		{name: "mysql kind after", after: "target: {kind: mariadb}", scripts: "good.mysql", dialect: mdbdialect.Script()},
		{name: "mysql target.dsn", after: `target: {dsn: "mysql://app@127.0.0.1:1/shop"}`, scripts: "good.mysql", dialect: mdbdialect.Script()},
		{name: "mariadb --dsn", dsn: "mariadb://app@127.0.0.1:1/shop", scripts: "good.mysql", dialect: mdbdialect.Script()},
		{name: "mysql inline", after: "target: {kind: mariadb}", scripts: "{inline: \"SELECT `a` FROM t; # it's \\\\o/\"}", dialect: mdbdialect.Script()},
		{name: "mysql bad", dsn: "mysql://app@127.0.0.1:1/shop", scripts: "bad.mysql",
			want: "$D/bad.mysql:2:10: unrecognized time unit"},
		{name: "mysql bad kind after", after: "target: {kind: mariadb}", scripts: "bad.mysql",
			want: "$D/bad.mysql:2:10: unrecognized time unit"},
		// The same scripts as PostgreSQL's SQL: the other way round.
		{name: "mysql script as postgres", scripts: "good.mysql",
			want: "$D/good.mysql:1:36: invalid command \\n';"},
		{name: "bad mysql as postgres", scripts: "bad.mysql", dialect: pgdialect.Script()},
		// A Redis script on a PostgreSQL target is PostgreSQL's SQL: the
		// --dsn's scheme decides over no kind at all.
		{name: "postgres --dsn", dsn: "postgres://app@127.0.0.1:1/db", scripts: "good.redis", dialect: pgdialect.Script()},
		// A binary file is refused in every dialect.
		{name: "junk as postgres", scripts: "{inline: \"SELECT 1;\\0\"}", want: "$D/d.yaml:5:24: inline script, line 1, column 10: a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The scripts are on line 5 whether or not the target comes
			// first (x- keys are ignored).
			before := "x-pad: 0"
			if tt.target != "" {
				before = tt.target
			}
			text := before + "\n" + strings.Replace(workloads, "%s", tt.scripts, 1) + tt.after + "\nname: d\nduration: 1s\n"
			s, err := Parse(path, []byte(text), kinds.Registry().ScenarioOptionsFor(tt.dsn))
			want := strings.ReplaceAll(tt.want, "$D", dir)
			switch {
			case want == "" && err != nil:
				t.Fatalf("%v\nin:\n%s", err, text)
			case want == "" && s.Dialect != tt.dialect:
				t.Errorf("dialect %v, want %v", s.Dialect, tt.dialect)
			case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
				t.Errorf("error %v\nwant prefix %s\nin:\n%s", err, want, text)
			}
		})
	}
}
