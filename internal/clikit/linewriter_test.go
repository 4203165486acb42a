package clikit

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
)

// LineWriter paints whole lines after a tabwriter laid them out, asks for
// the colour decision on every write, holds a partial line until its end
// or FlushLines, and passes writes through untouched while colour is off.
func TestLineWriter(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	on := true
	w := LineWriter(&out, func() bool { return on }, func(line string) string {
		return strings.Replace(line, "FAIL", Paint(true, Red, "FAIL"), 1)
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAIL\tlong-metric-name\tx")
	fmt.Fprintln(tw, "ok\tm\ty")
	tw.Flush()
	want := "\x1b[31mFAIL\x1b[0m  long-metric-name  x\nok    m                 y\n"
	if out.String() != want {
		t.Errorf("painted table\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	fmt.Fprint(w, "FAIL partial")
	if out.Len() != 0 {
		t.Errorf("a partial line was written: %q", out.String())
	}
	if err := FlushLines(w); err != nil || out.String() != "\x1b[31mFAIL\x1b[0m partial" {
		t.Errorf("FlushLines: %v, %q", err, out.String())
	}
	out.Reset()
	on = false
	fmt.Fprint(w, "FAIL off")
	if out.String() != "FAIL off" {
		t.Errorf("colour off: %q, want the write as it was, at once", out.String())
	}
}

// ForJSON: with "-" the JSON goes to stdout and the human output to
// stderr; with a file, nothing moves.
func TestForJSON(t *testing.T) {
	t.Parallel()
	env, out, errb := MemoryEnv("")
	env.StderrTerminal = true
	human, write := env.ForJSON("-")
	fmt.Fprint(human.Stdout, "summary")
	if err := write([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	if out.String() != "{}" || errb.String() != "summary" || !human.StdoutTerminal {
		t.Errorf("stdout %q, stderr %q, human's stdout a terminal %v", out, errb, human.StdoutTerminal)
	}
	path := t.TempDir() + "/r.json"
	human, write = env.ForJSON(path)
	if human != env {
		t.Error("with a file, the human output moved")
	}
	if err := write([]byte("{}")); err != nil {
		t.Fatal(err)
	}
}
