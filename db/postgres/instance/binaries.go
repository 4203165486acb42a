package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// debianVersionsGlob is where Debian and Ubuntu install one directory of
// server binaries per major version, side by side.
const debianVersionsGlob = "/usr/lib/postgresql/*/bin"

// installHint tells a user who has no server binaries how to get them.
const installHint = "install Debian's postgresql package (apt-get install postgresql) or run `make setup`, " +
	"or point Options.BinDir at a directory holding postgres and initdb"

// findBinDir picks the directory of server binaries to use: the one asked
// for, else the one of `postgres` on PATH, else the newest Debian-style
// versioned directory.
func findBinDir(requested string) (string, error) {
	if requested != "" {
		if err := checkBinDir(requested); err != nil {
			return "", fmt.Errorf("server binaries in %s: %w", requested, err)
		}
		return requested, nil
	}
	if postgresPath, err := exec.LookPath("postgres"); err == nil {
		// Resolve symlinks so pg_config, pgbench and psql are taken from the
		// same installation as the server (/usr/local/bin/postgres ->
		// /usr/lib/postgresql/15/bin/postgres).
		resolved, err := filepath.EvalSymlinks(postgresPath)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w", postgresPath, err)
		}
		if absolute, err := filepath.Abs(resolved); err == nil {
			resolved = absolute
		}
		dir := filepath.Dir(resolved)
		if err := checkBinDir(dir); err == nil {
			return dir, nil
		}
	}
	candidates, err := filepath.Glob(debianVersionsGlob)
	if err != nil {
		return "", fmt.Errorf("look for server binaries in %s: %w", debianVersionsGlob, err)
	}
	best, bestVersion := "", []int(nil)
	for _, dir := range candidates {
		version, ok := parseVersion(filepath.Base(filepath.Dir(dir)))
		if !ok || checkBinDir(dir) != nil {
			continue
		}
		if best == "" || compareVersions(version, bestVersion) > 0 {
			best, bestVersion = dir, version
		}
	}
	if best == "" {
		return "", fmt.Errorf("no PostgreSQL server binaries found (no postgres on PATH, nothing in %s): %s",
			debianVersionsGlob, installHint)
	}
	return best, nil
}

// Pgbench returns the pgbench of the installation a throwaway server
// would run from (findBinDir's choice), for comparing firedrill with it.
func Pgbench() (string, error) {
	dir, err := findBinDir("")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "pgbench")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no pgbench beside the server binaries in %s: install Debian's postgresql-client", dir)
	}
	return path, nil
}

// checkBinDir reports whether dir holds the two programs a throwaway server needs.
func checkBinDir(dir string) error {
	var errs []error
	for _, program := range []string{"postgres", "initdb"} {
		path := filepath.Join(dir, program)
		info, err := os.Stat(path)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", program, err))
		case info.IsDir() || info.Mode().Perm()&0o111 == 0:
			errs = append(errs, fmt.Errorf("%s is not an executable file", path))
		}
	}
	return errors.Join(errs...)
}

// serverVersion asks the server binary for its version, e.g. "15.18".
func serverVersion(ctx context.Context, binDir string) (string, error) {
	postgresPath := filepath.Join(binDir, "postgres")
	out, err := exec.CommandContext(ctx, postgresPath, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w\n%s", postgresPath, err, out)
	}
	version, ok := versionFromBanner(string(out))
	if !ok {
		return "", fmt.Errorf("%s --version: cannot find a version in %q", postgresPath, strings.TrimSpace(string(out)))
	}
	return version, nil
}

// versionFromBanner extracts "15.18" from
// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)".
func versionFromBanner(banner string) (string, bool) {
	fields := strings.Fields(banner)
	for i, field := range fields {
		if field == "(PostgreSQL)" && i+1 < len(fields) {
			return fields[i+1], true
		}
	}
	// Builds that print something else still end the first line with a version.
	for _, field := range fields {
		if _, ok := parseVersion(field); ok {
			return field, true
		}
	}
	return "", false
}

// parseVersion splits "15", "15.18" or "9.6.24" into numbers; it also
// accepts a development suffix such as "17beta1" on the last part.
func parseVersion(text string) ([]int, bool) {
	parts := strings.Split(text, ".")
	numbers := make([]int, 0, len(parts))
	for i, part := range parts {
		if i == len(parts)-1 {
			part = strings.TrimRightFunc(part, func(r rune) bool { return r < '0' || r > '9' })
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		numbers = append(numbers, n)
	}
	return numbers, len(numbers) > 0
}

// compareVersions orders parsed versions numerically (so 10 > 9.6).
func compareVersions(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// hasPgStatStatements reports whether the installation ships the
// pg_stat_statements library, so it can be preloaded without making the
// server fail at start. Only the pg_config of the same installation is asked:
// another version's library would not load.
func hasPgStatStatements(ctx context.Context, binDir string) bool {
	libDir := filepath.Join(filepath.Dir(binDir), "lib") // Debian layout, when pg_config is absent
	pgConfig := filepath.Join(binDir, "pg_config")
	if out, err := exec.CommandContext(ctx, pgConfig, "--pkglibdir").Output(); err == nil {
		libDir = strings.TrimSpace(string(out))
	}
	_, err := os.Stat(filepath.Join(libDir, "pg_stat_statements.so"))
	return err == nil
}
