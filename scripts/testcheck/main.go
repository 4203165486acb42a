// Command testcheck reads `go test -json` output on stdin, prints it as
// go test would (the tests' output), and fails unless every test package
// ran and passed some test: a package whose every test skipped (a missing
// server binary, an unset variable), that ran none ([no tests to run]) or
// that did not finish counts as a failure, as does, with -drills DIR, a
// drill folder of DIR whose TestDrillQuick subtest did not pass. .ci/run
// pipes `make test` and `make test-drills` through it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	drillsDir := flag.String("drills", "", "require TestDrillQuick/NAME to pass for every NAME/drill.yaml in this folder")
	flag.Parse()
	var drills []string
	if *drillsDir != "" {
		files, err := filepath.Glob(filepath.Join(*drillsDir, "*", "drill.yaml"))
		if err != nil || len(files) == 0 {
			fmt.Fprintf(os.Stderr, "testcheck: no drill.yaml under %s (%v)\n", *drillsDir, err)
			os.Exit(2)
		}
		for _, f := range files {
			drills = append(drills, filepath.Base(filepath.Dir(f)))
		}
	}
	sum, err := read(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testcheck: reading go test -json: %v\n", err)
		os.Exit(2)
	}
	problems := sum.problems(drills)
	for _, p := range problems {
		fmt.Printf("testcheck: %s\n", p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
	fmt.Printf("testcheck: %d packages ran and passed tests", len(sum.packages))
	if len(drills) > 0 {
		fmt.Printf(", and the %d drills of %s", len(drills), *drillsDir)
	}
	fmt.Println()
}

// event is one line of `go test -json` (test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// pkgResult is what the events said of one package.
type pkgResult struct {
	ended   string         // the package's own pass, fail or skip; "" if it never ended
	results map[string]int // top-level tests by their outcome: pass, fail, skip
}

// summary is what the whole stream said.
type summary struct {
	packages map[string]*pkgResult
	order    []string
	passed   map[string]bool // tests (with subtests, "TestA/b") that passed, by "package TestA/b"
}

// read copies the tests' output to out and gathers the outcomes. Lines
// that are not JSON events (go vet, a make line) are copied as they are.
func read(in io.Reader, out io.Writer) (*summary, error) {
	s := &summary{packages: map[string]*pkgResult{}, passed: map[string]bool{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		if e.Action == "output" {
			io.WriteString(out, e.Output)
			continue
		}
		if e.Package == "" {
			continue
		}
		p := s.packages[e.Package]
		if p == nil {
			p = &pkgResult{results: map[string]int{}}
			s.packages[e.Package] = p
			s.order = append(s.order, e.Package)
		}
		switch {
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			p.ended = e.Action
		case e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			if !strings.Contains(e.Test, "/") {
				p.results[e.Action]++
			}
			if e.Action == "pass" {
				s.passed[e.Package+" "+e.Test] = true
			}
		}
	}
	return s, sc.Err()
}

// problems lists why the run does not count as a pass: each package with
// test files must end in pass having passed at least one test, and each
// drill's TestDrillQuick subtest must have passed (in any package).
func (s *summary) problems(drills []string) []string {
	var out []string
	if len(s.packages) == 0 {
		out = append(out, "no test package ran")
	}
	for _, name := range s.order {
		p := s.packages[name]
		switch {
		case p.ended == "skip": // no test files: nothing to run
		case p.ended == "":
			out = append(out, fmt.Sprintf("%s: did not finish (killed, or the output was cut)", name))
		case p.ended == "fail" || p.results["fail"] > 0:
			out = append(out, fmt.Sprintf("%s: failed", name))
		case p.results["pass"] == 0 && p.results["skip"] > 0:
			out = append(out, fmt.Sprintf("%s: every test skipped (%d): the package was skipped whole", name, p.results["skip"]))
		case p.results["pass"] == 0:
			out = append(out, fmt.Sprintf("%s: no test ran", name))
		}
	}
	for _, d := range drills {
		if !slices.ContainsFunc(s.order, func(pkg string) bool { return s.passed[pkg+" TestDrillQuick/"+d] }) {
			out = append(out, fmt.Sprintf("drill %s: TestDrillQuick/%s did not pass (not run, skipped or failed)", d, d))
		}
	}
	return out
}
