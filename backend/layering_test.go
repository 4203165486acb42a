package backend_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
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
// driver's (pgx today; the MySQL and Redis drivers when they come).
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

// databaseSpecific says whether pkg belongs to one kind of database: a
// throwaway server, a target, a database's or the host's sampler, a
// backend's own folder (backend/<kind>/…), a kind's folder (db/<kind>/…:
// its rules), or a database driver. The neutral sampler and
// backend packages are not; backend/all is the registration itself.
func databaseSpecific(pkg string) bool {
	if pkg == "instance/serverproc" {
		// Processes and temp directories with owners, reaped after a kill:
		// no database in it, and the drill command's folder needs it too.
		return false
	}
	if strings.HasPrefix(pkg, driverPrefix) || under(pkg, "instance") || under(pkg, "target") || under(pkg, "db") {
		return true
	}
	for _, neutral := range []string{"sampler", "backend"} {
		if strings.HasPrefix(pkg, neutral+"/") {
			return true
		}
	}
	return false
}

// metricLeaf says whether pkg is a metric-name leaf (pgmetric,
// hostmetric): the one owner of a backend's source and key names, which
// rules, thresholds, drills and reports import by design (issue 8). It is
// a leaf: it imports nothing else of firedrill.
func metricLeaf(graph map[string][]string, pkg string) bool {
	name := pkg[strings.LastIndex(pkg, "/")+1:]
	return strings.HasSuffix(name, "metric") && len(graph[pkg]) == 0
}

// registration is the one file through which the neutral layers reach
// every backend.
const registration = "backend/all"

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

// The database-neutral layers reach a database's packages only through
// the registration in backend/all (or a metric-name leaf), so that a new
// kind of database is one folder plus one line there (issue 8).
func TestNeutralLayersReachDatabasesOnlyThroughTheRegistry(t *testing.T) {
	roots := []string{"runner", "diagnose", "diagnose/diagnosetest", "report", "drills", "internal/cli"}
	var patterns []string
	for _, r := range roots {
		patterns = append(patterns, module+r)
	}
	graph := listDeps(t, patterns...)
	for _, root := range roots {
		chains := reach(graph, root, func(pkg string) bool { return pkg == registration })
		for _, pkg := range slices.Sorted(maps.Keys(chains)) {
			if databaseSpecific(pkg) && pkg != registration && !metricLeaf(graph, pkg) {
				t.Errorf("%s reaches %s, a database's own package, not through %s: %s",
					root, pkg, registration, strings.Join(chains[pkg], " → "))
			}
		}
	}
}

// The engine knows nothing of targets, servers, samplers, rules or
// backends (DESIGN.md: data flows one way).
func TestEngineImportsNoLayerAboveIt(t *testing.T) {
	graph := listDeps(t, module+"engine/...")
	above := []string{"target", "instance", "sampler", "diagnose", "backend", "runner", "report"}
	for _, root := range slices.Sorted(maps.Keys(graph)) {
		if !under(root, "engine") {
			continue
		}
		chains := reach(graph, root, func(string) bool { return false })
		for _, pkg := range slices.Sorted(maps.Keys(chains)) {
			if slices.ContainsFunc(above, func(dir string) bool { return under(pkg, dir) }) {
				t.Errorf("%s reaches %s: %s", root, pkg, strings.Join(chains[pkg], " → "))
			}
		}
	}
}

// The SQL static analyser reads text only: it reaches nothing of
// firedrill but the script language it simulates scripts with, so the
// rules in diagnose call it and never the other way round (issue 21).
func TestSQLCheckImportsOnlyTheScriptLanguage(t *testing.T) {
	graph := listDeps(t, module+"sqlcheck/...")
	for _, root := range slices.Sorted(maps.Keys(graph)) {
		if !under(root, "sqlcheck") {
			continue
		}
		chains := reach(graph, root, func(string) bool { return false })
		for _, pkg := range slices.Sorted(maps.Keys(chains)) {
			if !under(pkg, "sqlcheck") && !under(pkg, "script") {
				t.Errorf("%s reaches %s: %s", root, pkg, strings.Join(chains[pkg], " → "))
			}
		}
	}
}
