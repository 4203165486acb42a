package postgres

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	return cmd.Process.Pid
}

func TestReapStaleDecidesByOwner(t *testing.T) {
	t.Parallel()
	myStart, ok := processStartTime(os.Getpid())
	if !ok {
		t.Skip("no /proc: cannot read process start times")
	}
	dead := deadPID(t)
	old := time.Now().Add(-2 * ownerlessGrace)
	tests := []struct {
		name  string
		owner string // owner file content; "" = no owner file
		old   bool   // directory older than ownerlessGrace
		reap  bool
	}{
		// A live owner's directory is never touched.
		{"live owner", strconv.Itoa(os.Getpid()) + " " + myStart, false, false},
		{"live owner without start time", strconv.Itoa(os.Getpid()), true, false},
		// The owner process is gone.
		{"dead owner", strconv.Itoa(dead), false, true},
		// Our pid, but a different start time: the owner died and its pid was recycled.
		{"recycled pid", strconv.Itoa(os.Getpid()) + " 1", false, true},
		// A directory is created a moment before its owner file: leave young ones alone.
		{"no owner file yet", "", false, false},
		{"no owner file for long", "", true, true},
		{"garbage owner file, young", "not a pid", false, false},
		{"garbage owner file, old", "not a pid", true, true},
	}
	root := t.TempDir()
	dirs := make([]string, len(tests))
	for n, test := range tests {
		dirs[n] = filepath.Join(root, dirPrefix+strconv.Itoa(n))
		if err := os.Mkdir(dirs[n], 0o700); err != nil {
			t.Fatal(err)
		}
		if test.owner != "" {
			if err := os.WriteFile(filepath.Join(dirs[n], ownerFileName), []byte(test.owner+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if test.old {
			if err := os.Chtimes(dirs[n], old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Not instance directories: left alone whatever their content.
	unrelated := filepath.Join(root, "firedrill-other")
	if err := os.Mkdir(unrelated, 0o700); err != nil {
		t.Fatal(err)
	}

	var reported []string
	if err := reapStale(root, func(format string, args ...any) {
		reported = append(reported, args[0].(string))
	}); err != nil {
		t.Fatalf("reapStale: %v", err)
	}
	for n, test := range tests {
		_, err := os.Stat(dirs[n])
		reaped := os.IsNotExist(err)
		if reaped != test.reap {
			t.Errorf("%s: reaped = %v, want %v", test.name, reaped, test.reap)
		}
		if reaped != slices.Contains(reported, dirs[n]) {
			t.Errorf("%s: reaped = %v but reported = %v", test.name, reaped, !reaped)
		}
	}
	if _, err := os.Stat(unrelated); err != nil {
		t.Errorf("unrelated directory touched: %v", err)
	}
}

func TestIsPostmasterOfRejectsOtherProcesses(t *testing.T) {
	t.Parallel()
	// The test binary is alive but is no postgres: a recycled pid in a stale
	// postmaster.pid must never get a process killed.
	if isPostmasterOf(os.Getpid(), "/tmp/x/data") {
		t.Error("the test binary was taken for a postmaster")
	}
	if isPostmasterOf(deadPID(t), "/tmp/x/data") {
		t.Error("a dead pid was taken for a postmaster")
	}
}

func TestVersionFromBanner(t *testing.T) {
	t.Parallel()
	tests := []struct{ banner, want string }{
		{"postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", "15.18"},
		{"postgres (PostgreSQL) 17beta1\n", "17beta1"},
		{"postgres (PostgreSQL) 9.6.24\n", "9.6.24"},
		// A rebranded build still prints a version.
		{"postgres (SomeFork) 16.2\n", "16.2"},
	}
	for _, test := range tests {
		if got, ok := versionFromBanner(test.banner); !ok || got != test.want {
			t.Errorf("versionFromBanner(%q) = %q, %v; want %q", test.banner, got, ok, test.want)
		}
	}
	if got, ok := versionFromBanner("no version here"); ok {
		t.Errorf("versionFromBanner without a version = %q, true", got)
	}
}

func TestCompareVersionsIsNumeric(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"10", "9.6", 1}, // a string comparison would get this wrong
		{"15", "15", 0},
		{"15.2", "15.10", -1},
		{"16", "15.18", 1},
	}
	for _, test := range tests {
		a, _ := parseVersion(test.a)
		b, _ := parseVersion(test.b)
		if got := compareVersions(a, b); got != test.want {
			t.Errorf("compareVersions(%s, %s) = %d, want %d", test.a, test.b, got, test.want)
		}
	}
}

func TestQuoteConnValueRoundTrips(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"/tmp/firedrill-pg-1", "/tmp/with space", `/tmp/it's`, `/tmp/back\slash`} {
		config, err := pgconn.ParseConfig("host=" + quoteConnValue(dir) + " port=5433 user=x sslmode=disable")
		if err != nil {
			t.Errorf("parse host %q: %v", dir, err)
			continue
		}
		if config.Host != dir {
			t.Errorf("host %q came back as %q", dir, config.Host)
		}
	}
}

func TestLogTailKeepsTheEnd(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), logFileName)
	var lines []string
	for n := range 100 {
		lines = append(lines, "line "+strconv.Itoa(n))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tail := logTail(path, 0)
	if !strings.Contains(tail, "line 99") || strings.Contains(tail, "line 10\n") {
		t.Errorf("tail is not the last lines:\n%s", tail)
	}
	// Only what was written since the offset (this start attempt) is shown.
	offset := int64(len(strings.Join(lines[:98], "\n")) + 1)
	if tail := logTail(path, offset); strings.Contains(tail, "line 97") || !strings.Contains(tail, "line 98") {
		t.Errorf("tail from offset shows older lines:\n%s", tail)
	}
}
