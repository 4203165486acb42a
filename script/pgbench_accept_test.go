package script

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestAcceptsWhatPgbenchAccepts checks, without a server, that Parse
// accepts and refuses the same scripts as the installed pgbench: pgbench
// parses its scripts before connecting, so a script it accepts fails only on
// the connection to a socket that does not exist.
func TestAcceptsWhatPgbenchAccepts(t *testing.T) {
	t.Parallel()
	pgbench, err := pgbenchBinary()
	if err != nil {
		t.Skip(err)
	}
	cases := []struct {
		src string
		// stricter marks scripts pgbench accepts and only fails when a
		// client runs them, which Parse refuses up front.
		stricter bool
	}{
		{src: "SELECT 1;"},
		{src: "SELECT 1"},
		{src: "-- only a comment\n"},
		{src: ";"},
		{src: "\\"},
		{src: "\\ set x 1"},
		{src: "\\SLEEP 1 MS"},
		{src: "\\sleep +"},
		{src: "\\sleep 1x"},
		{src: "\\sleep x1"},
		{src: "\\sleep 1 2"},
		{src: "\\sleep :v"},
		{src: "\\sleep 1\\\nms"},
		{src: "\\set x 1 junk"},
		{src: "\\set x"},
		{src: "\\set x (1"},
		{src: "\\set x 1 +\\\n 2"},
		{src: "\\if 1\n\\endif"},
		{src: "\\if 1\n\\elif 2\n\\else\n\\endif"},
		{src: "\\if 1\n\\else\n\\elif 2\n\\endif"},
		{src: "\\if 1\n\\if 2\n\\endif"},
		{src: "\\else"},
		{src: "\\endif x"},
		{src: "SELECT 1 \\gset"},
		{src: "SELECT 1;\n\n\\aset pre"},
		{src: "\\set x 1\n\\gset"},
		{src: "SELECT 1 \\gset\n\\gset"},
		{src: "SELECT 1 \\gset a b"},
		{src: "\\shell"},
		{src: "\\shell echo ::x :y"},
		{src: "\\setshell v"},
		{src: "\\setshell v echo 1"},
		{src: "\\startpipeline\nSELECT 1;\n\\endpipeline"},
		{src: "\\startpipeline x"},
		{src: "\\foo"},
		{src: "SELECT 'unterminated"},
		{src: "SELECT 1 \\; SELECT 2"},
		{src: "\\set 1x 2", stricter: true},
		{src: "\\sleep :", stricter: true},
		{src: "\\shell echo :-x", stricter: true},
		{src: "\\setshell 9 echo 1", stricter: true},
		{src: "\\endpipeline", stricter: true},
		{src: "\\startpipeline\n\\startpipeline\n\\endpipeline\n\\endpipeline", stricter: true},
		{src: "\\startpipeline\nSELECT 1 \\gset\n\\endpipeline", stricter: true},
		{src: "\\startpipeline\nSELECT 1;", stricter: true},
	}
	for _, seed := range fuzzSeeds {
		if !strings.Contains(seed, "syncpipeline") { // new in PostgreSQL 17
			cases = append(cases, struct {
				src      string
				stricter bool
			}{src: seed})
		}
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, strconv.Itoa(i)+".sql")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			out, _ := exec.Command(pgbench, "-h", filepath.Join(dir, "no-server"), "-p", "1", "-n", "-t", "1", "-f", path).CombinedOutput()
			pgbenchAccepts := strings.Contains(string(out), "connection to server")
			_, err := Parse("s.sql", []byte(tc.src), NewSymbols())
			var scriptErr *Error
			if err != nil && !errors.As(err, &scriptErr) {
				t.Errorf("%q: error %v is not an *Error", tc.src, err)
			}
			if weAccept, wantAccept := err == nil, pgbenchAccepts && !tc.stricter; weAccept != wantAccept {
				t.Errorf("%q: Parse error = %v, but pgbench says:\n%s", tc.src, err, out)
			}
		})
	}
}
