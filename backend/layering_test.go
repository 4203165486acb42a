package backend_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is firedrill's module path; the rules below name packages
// relative to it.
const module = "github.com/firedrill/firedrill/"

// goPackage is what `go list -json` says of one package.
type goPackage struct {
	ImportPath string
	Imports    []string
}

// listDeps runs `go list -deps -json` on patterns: every package they
// reach, keyed by import path relative to the module (other modules and
// the standard library are left out).
func listDeps(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Imports"}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", strings.Join(patterns, " "), err, stderr.Bytes())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -deps: reading its JSON: %v", err)
		}
		path, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		var imports []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				imports = append(imports, rel)
			} else if isDriver(imp) {
				imports = append(imports, driverPrefix+imp)
			}
		}
		graph[path] = imports
	}
	return graph
}

// driverPrefix marks a database driver's package in the graph.
const driverPrefix = "driver:"

// isDriver says whether an import path outside the module is a database
// driver's (pgx's, and the MySQL and Redis drivers should they come).
func isDriver(path string) bool {
	for _, d := range []string{"github.com/jackc/", "github.com/go-sql-driver/", "github.com/redis/"} {
		if strings.HasPrefix(path, d) {
			return true
		}
	}
	return false
}

// under says whether pkg is dir or inside it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// kindOf is the kind whose folder pkg is in (db/<kind>/…), or "".
func kindOf(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "db/")
	if !ok {
		return ""
	}
	kind, _, _ := strings.Cut(rest, "/")
	return kind
}

// registration is the one package that names every kind (kinds/kinds.go):
// it builds the registry the binary hands down. Only the binary's main
// package and test code import it.
const registration = "kinds"

// composer is the binary's main package, the one package of the binary
// that imports the registration.
const composer = "cmd/firedrill"

// testSupport are the packages that drive every kind for tests; only test
// code imports them.
var testSupport = []string{"backend/backendtest"}

// reach walks the imports from root and returns, for every package it
// reaches, the chain of imports that got there first; it does not walk
// past the packages stop says to stop at.
func reach(graph map[string][]string, root string, stop func(string) bool) map[string][]string {
	chains := map[string][]string{root: {root}}
	queue := []string{root}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if pkg != root && stop(pkg) {
			continue
		}
		for _, imp := range graph[pkg] {
			if _, seen := chains[imp]; seen {
				continue
			}
			chains[imp] = append(slices.Clip(chains[pkg]), imp)
			queue = append(queue, imp)
		}
	}
	return chains
}

// A kind's folder db/<kind>/ is everything that kind knows: no package
// outside it imports a package inside it, nor a database driver, but the
// registration (package kinds), the test-support packages, and
// the benchmarks (programs outside the binary, each measuring one kind
// against its peer: pgbench, sysbench, redis-benchmark) and the services
// of the examples (programs a scenario starts). Test files may
// import what they test. One kind's folder imports nothing of another's.
// A new kind of database is then one folder plus one line in the
// registration (issue 21).
func TestKindFoldersAreImportedOnlyByTheRegistration(t *testing.T) {
	checkKindFolders(t, listDeps(t, module+"..."))
}

// checkKindFolders is TestKindFoldersAreImportedOnlyByTheRegistration on
// one import graph (deliberately broken ones in
// TestKindFolderCheckRefusesViolations).
func checkKindFolders(t testing.TB, graph map[string][]string) {
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		for _, imp := range graph[pkg] {
			inKind := kindOf(imp) != "" || strings.HasPrefix(imp, driverPrefix)
			switch {
			case !inKind:
			case kindOf(pkg) != "":
				if kindOf(imp) != "" && kindOf(imp) != kindOf(pkg) {
					t.Errorf("%s imports %s: one kind's folder reaches into another's", pkg, imp)
				}
			case pkg == registration || slices.Contains(testSupport, pkg) || under(pkg, "bench") || under(pkg, "examples"):
				// The registration (its files are checked below),
				// the tests' helpers, the benchmarks, the examples'
				// services (programs a scenario starts, such as
				// examples/journal-api in front of PostgreSQL).
			default:
				t.Errorf("%s imports %s, a package of one kind of database: a neutral package receives the registry (or data registered in it) instead", pkg, imp)
			}
		}
	}
	// The test-support packages are for tests: no package of the
	// binary imports them (test files are not in this graph); and only
	// the binary's main package takes the registration, which every
	// other package receives from its caller.
	for _, pkg := range slices.Sorted(maps.Keys(graph)) {
		for _, imp := range graph[pkg] {
			switch {
			case slices.Contains(testSupport, imp) && !slices.Contains(testSupport, pkg):
				t.Errorf("%s imports %s, which drives every kind for tests only: take the registry from the caller (cmd/firedrill builds it)", pkg, imp)
			case imp == registration && pkg != composer && !slices.Contains(testSupport, pkg):
				t.Errorf("%s imports %s, the registration: take the registry from the caller (only %s builds it)", pkg, imp, composer)
			}
		}
	}
}

// The registration names each kind's Backend package alone (the rest of
// a kind is reached through its Backend), and the binary's main package
// names no kind: it takes the registry from the registration.
func TestOnlyTheRegistrationNamesAKind(t *testing.T) {
	named := 0
	for _, dir := range []string{registration, composer} {
		files, err := filepath.Glob(filepath.Join("..", filepath.FromSlash(dir), "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s's files: %v, %v", dir, files, err)
		}
		for _, file := range files {
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			rel := path.Join(dir, filepath.Base(file))
			if strings.HasSuffix(rel, "_test.go") {
				continue
			}
			for _, spec := range f.Imports {
				imp := strings.TrimPrefix(strings.Trim(spec.Path.Value, `"`), module)
				if kindOf(imp) == "" {
					continue
				}
				named++
				switch {
				case dir != registration:
					t.Errorf("%s imports %s: only the registration (%s) names a kind", rel, imp, registration)
				case imp != "db/"+kindOf(imp):
					t.Errorf("%s imports %s: the registration names a kind's Backend package (db/%s) only", rel, imp, kindOf(imp))
				}
			}
		}
	}
	if named == 0 {
		t.Errorf("%s names no kind: is the registration still there?", registration)
	}
}

// The runner runs any kind it is handed: it reaches neither a kind's
// folder nor the registration, and so links no driver.
func TestRunnerLinksNoKind(t *testing.T) {
	graph := listDeps(t, module+"runner")
	chains := reach(graph, "runner", func(string) bool { return false })
	for _, pkg := range slices.Sorted(maps.Keys(chains)) {
		if kindOf(pkg) != "" || strings.HasPrefix(pkg, driverPrefix) || pkg == registration || slices.Contains(testSupport, pkg) || under(pkg, "cmd") {
			t.Errorf("runner reaches %s: %s", pkg, strings.Join(chains[pkg], " → "))
		}
	}
}

// belowEngine are the packages of firedrill the engine builds on: the
// script language it runs (and the SQL lexer that splits its commands),
// the timeline it records into, and the password masking of its errors. Everything else of firedrill is above
// it (DESIGN.md: data flows one way).
var belowEngine = []string{"script", "sqllex", "timeline", "internal/secret"}

// The engine knows nothing of kinds, targets, samplers, rules, the
// registry or the runner: it imports only the packages below it.
func TestEngineImportsNoLayerAboveIt(t *testing.T) {
	graph := listDeps(t, module+"engine/...")
	for _, root := range slices.Sorted(maps.Keys(graph)) {
		if !under(root, "engine") {
			continue
		}
		chains := reach(graph, root, func(string) bool { return false })
		for _, pkg := range slices.Sorted(maps.Keys(chains)) {
			below := under(pkg, "engine") || slices.ContainsFunc(belowEngine, func(dir string) bool { return under(pkg, dir) })
			if !below {
				t.Errorf("%s reaches %s: %s", root, pkg, strings.Join(chains[pkg], " → "))
			}
		}
	}
}

// The socket layer under the clients (engine/sockio) is the bottom of the
// hot path: it reaches nothing of firedrill, so the engine and every
// kind's client build on it and it on neither (issue 21).
func TestSocketLayerImportsNothingOfFiredrill(t *testing.T) {
	graph := listDeps(t, module+"engine/sockio")
	chains := reach(graph, "engine/sockio", func(string) bool { return false })
	for _, pkg := range slices.Sorted(maps.Keys(chains)) {
		if pkg != "engine/sockio" {
			t.Errorf("engine/sockio reaches %s: %s", pkg, strings.Join(chains[pkg], " → "))
		}
	}
}

// The SQL static analyser reads text only: it reaches nothing of
// firedrill but the script language it simulates scripts with and the
// SQL lexer, so the rules in diagnose call it and never the other way
// round (issue 21).
func TestSQLCheckImportsOnlyTheScriptLanguage(t *testing.T) {
	graph := listDeps(t, module+"sqlcheck/...")
	for _, root := range slices.Sorted(maps.Keys(graph)) {
		if !under(root, "sqlcheck") {
			continue
		}
		chains := reach(graph, root, func(string) bool { return false })
		for _, pkg := range slices.Sorted(maps.Keys(chains)) {
			if !under(pkg, "sqlcheck") && !under(pkg, "script") && !under(pkg, "sqllex") {
				t.Errorf("%s reaches %s: %s", root, pkg, strings.Join(chains[pkg], " → "))
			}
		}
	}
}

// The SQL lexer is shared by the script parser, the kinds' confinement
// checks and the analyser: it imports nothing of firedrill, so any of
// them may use it (issue 21).
func TestSQLLexImportsNothing(t *testing.T) {
	graph := listDeps(t, module+"sqllex/...")
	for _, root := range slices.Sorted(maps.Keys(graph)) {
		if !under(root, "sqllex") {
			continue
		}
		for _, imp := range graph[root] {
			if !under(imp, "sqllex") {
				t.Errorf("sqllex must import nothing of firedrill; %s imports %s", root, imp)
			}
		}
	}
}

// errorRecorder is a testing.TB that keeps what a check reports, so the
// check itself can be tested on a graph made to break it.
type errorRecorder struct {
	testing.TB
	errors []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// The kind-folder check refuses each way of breaking it: a neutral package
// importing a kind's package (its metric names too) or a driver, a kind
// reaching into another, the binary importing the tests' helpers and a
// neutral package importing the registration; and it lets the
// registration, the main package's use of it, the tests' helpers and the
// benchmarks through.
func TestKindFolderCheckRefusesViolations(t *testing.T) {
	t.Parallel()
	graph := map[string][]string{
		"cmd/firedrill":        {"kinds", "internal/cli"},
		"kinds":                {"db/postgres"},
		"backend/backendtest":  {"kinds", "db/postgres"},
		"internal/cli":         {"kinds"},
		"bench/vs-pgbench":     {"db/postgres/instance"},
		"diagnose":             {"db/postgres/pgmetric"},
		"db/postgres":          {"db/postgres/instance", "driver:github.com/jackc/pgx/v5"},
		"db/postgres/instance": nil,
		"db/postgres/pgmetric": nil,
		"db/redis":             {"db/postgres/pgmetric"},
		"report":               {"db/postgres/instance"},
		"timeline":             {"driver:github.com/jackc/pgx/v5"},
		"runner":               {"backend/backendtest"},
	}
	r := &errorRecorder{TB: t}
	checkKindFolders(r, graph)
	want := []string{
		"diagnose imports db/postgres/pgmetric",
		"db/redis imports db/postgres/pgmetric",
		"report imports db/postgres/instance",
		"timeline imports driver:github.com/jackc/pgx/v5",
		"runner imports backend/backendtest",
		"internal/cli imports kinds",
	}
	if len(r.errors) != len(want) {
		t.Errorf("%d errors, want %d:\n%s", len(r.errors), len(want), strings.Join(r.errors, "\n"))
	}
	for _, w := range want {
		if !slices.ContainsFunc(r.errors, func(e string) bool { return strings.HasPrefix(e, w) }) {
			t.Errorf("no error starting %q in:\n%s", w, strings.Join(r.errors, "\n"))
		}
	}
}
