package mariadb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// serverProgram and installProgram are the MariaDB programs an instance needs.
const (
	serverProgram  = "mariadbd"
	installProgram = "mariadb-install-db"
)

// searchDirs are looked in after PATH: Debian puts mariadbd in /usr/sbin,
// which an ordinary user's PATH often lacks.
var searchDirs = []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/mysql/bin", "/opt/mariadb/bin"}

// binaries are the programs an instance runs.
type binaries struct {
	server, install string
}

// findBinaries locates mariadbd and mariadb-install-db: in dir if given,
// else on PATH and then in the usual places.
func findBinaries(dir string) (binaries, error) {
	if dir != "" {
		b := binaries{filepath.Join(dir, serverProgram), filepath.Join(dir, installProgram)}
		var missing []string
		for _, path := range []string{b.server, b.install} {
			if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
				missing = append(missing, filepath.Base(path))
			}
		}
		if len(missing) > 0 {
			return binaries{}, fmt.Errorf("%s has no %s", dir, strings.Join(missing, " or "))
		}
		return b, nil
	}
	var b binaries
	var missing []string
	for _, found := range []struct {
		program string
		into    *string
	}{{serverProgram, &b.server}, {installProgram, &b.install}} {
		path, err := lookProgram(found.program)
		if err != nil {
			missing = append(missing, found.program)
			continue
		}
		*found.into = path
	}
	if len(missing) > 0 {
		return binaries{}, fmt.Errorf("MariaDB's %s not found on PATH or in %s; install MariaDB "+
			"(Debian/Ubuntu: `apt-get install mariadb-server mariadb-client`, or the README's scripts/setup.sh, "+
			"which leaves Debian's own service stopped), or point the scenario at a server with --dsn mysql://…",
			strings.Join(missing, " and "), strings.Join(searchDirs, ", "))
	}
	return b, nil
}

// lookProgram finds program on PATH, then in searchDirs.
func lookProgram(program string) (string, error) {
	if path, err := exec.LookPath(program); err == nil {
		return path, nil
	}
	for _, dir := range searchDirs {
		path := filepath.Join(dir, program)
		if info, err := os.Stat(path); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return path, nil
		}
	}
	return "", errors.New(program + " not found")
}

// versionPattern finds the version in `mariadbd --version`:
// "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64".
var versionPattern = regexp.MustCompile(`Ver\s+(\d+(?:\.\d+)+)`)

// serverVersion runs `mariadbd --version` and returns the version, e.g. "10.11.19".
func serverVersion(ctx context.Context, server string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, server, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", server, err, strings.TrimSpace(string(out)))
	}
	version, ok := versionFromBanner(string(out))
	if !ok {
		return "", fmt.Errorf("%s --version printed no version: %q", server, strings.TrimSpace(string(out)))
	}
	if !strings.Contains(string(out), "MariaDB") {
		return "", fmt.Errorf("%s is not MariaDB (%q): firedrill's throwaway server needs MariaDB's "+
			"mariadbd; point the scenario at a MySQL server with --dsn mysql://… instead", server, strings.TrimSpace(string(out)))
	}
	return version, nil
}

// versionFromBanner extracts the version from mariadbd --version's output.
func versionFromBanner(banner string) (string, bool) {
	m := versionPattern.FindStringSubmatch(banner)
	if m == nil {
		return "", false
	}
	return m[1], true
}
