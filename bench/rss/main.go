// Command rss measures the memory of many firedrill clients per kind of
// database: for each kind it starts a throwaway server, runs a short
// `firedrill run` of N clients (1,000 by default) against it with --dsn,
// as a user would, and prints the peak resident memory (VmHWM) of the
// firedrill process. It exits non-zero when a kind is over the limit
// (100 MB by default), so that a change that makes the clients' buffers
// grow fails here rather than on a user's machine.
//
//	go run ./bench/rss [-clients 1000] [-seconds 5] [-kinds postgres,mariadb,redis] [-limit-mb 100]
//
// The server is this program's child, not firedrill's, so that its memory
// is not counted; VmHWM is read from /proc while firedrill runs (its last
// reading is the process's peak, barring a peak in the final moment),
// and the child's rusage (ru_maxrss) is printed beside it.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/firedrill/firedrill/bench/internal/benchkit"
	mariadb "github.com/firedrill/firedrill/db/mariadb/instance"
	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	redis "github.com/firedrill/firedrill/db/redis/instance"
)

// kind is how to start one kind's server and what its clients run.
type kind struct {
	name string
	// start starts the server for clients connections and returns the
	// --dsn URL of its administrator and a function that stops it.
	start func(ctx context.Context, clients int) (dsn string, stop func() error, err error)
	// connLimit is the server's setting for its connection limit.
	connLimit string
	// script is one transaction of the workload: cheap, so that the
	// memory measured is the clients', not the replies'.
	script string
}

var kinds = []kind{
	{"postgres", startPostgres, "max_connections", "SELECT 1;"},
	{"mariadb", startMariaDB, "max_connections", "SELECT 1;"},
	{"redis", startRedis, "maxclients", "\\set id random(1, 1000)\nGET firedrill:key::id"},
}

func main() {
	clients := flag.Int("clients", 1000, "clients of the workload")
	seconds := flag.Int("seconds", 5, "duration of each run")
	kindList := flag.String("kinds", "postgres,mariadb,redis", "kinds to measure")
	limitMB := flag.Float64("limit-mb", 100, "fail when a kind's peak RSS is over this many MB")
	bin := flag.String("firedrill", "", "firedrill binary (default: build one)")
	embedded := flag.Bool("embedded", false, "let firedrill start its own embedded server (its rusage then counts the server too; VmHWM stays firedrill's)")
	flag.Parse()
	over, err := run(*clients, *seconds, strings.Split(*kindList, ","), *limitMB, *bin, *embedded)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rss:", err)
		os.Exit(1)
	}
	if len(over) > 0 {
		fmt.Fprintf(os.Stderr, "rss: over %.0f MB: %s\n", *limitMB, strings.Join(over, ", "))
		os.Exit(1)
	}
}

// run measures each kind and returns those over the limit.
func run(clients, seconds int, names []string, limitMB float64, bin string, embedded bool) (over []string, err error) {
	dir, err := os.MkdirTemp("", "bench-rss-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "firedrill")
		build := exec.Command("go", "build", "-o", bin, "./cmd/firedrill")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("building firedrill: %w", err)
		}
	}
	fmt.Printf("%d clients, %d s per run, limit %.0f MB; machine: %d CPUs, load average %s\n",
		clients, seconds, limitMB, benchkit.NumCPU(), benchkit.LoadAverage(3))
	for _, name := range names {
		k, ok := findKind(name)
		if !ok {
			return over, fmt.Errorf("unknown kind %q (have postgres, mariadb, redis)", name)
		}
		hwm, maxRSS, err := measure(k, bin, dir, clients, seconds, embedded)
		if err != nil {
			return over, fmt.Errorf("%s: %w", name, err)
		}
		verdict := "ok"
		if hwm > limitMB {
			verdict = "OVER"
			over = append(over, name)
		}
		fmt.Printf("  %-9s peak RSS %6.1f MB (VmHWM; rusage %.1f MB)   %s\n", name, hwm, maxRSS, verdict)
	}
	return over, nil
}

func findKind(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

// measure starts k's server, runs firedrill's clients against it and
// returns the firedrill process's peak RSS: VmHWM and ru_maxrss, in MB.
func measure(k kind, bin, dir string, clients, seconds int, embedded bool) (hwmMB, maxRSSMB float64, err error) {
	ctx := context.Background()
	args := []string{"run", filepath.Join(dir, k.name+".yaml"), "--out", filepath.Join(dir, "runs"), "--no-color"}
	settings := ""
	if embedded {
		settings = fmt.Sprintf(", settings: {%s: %d}", k.connLimit, clients+100)
	} else {
		dsn, stop, err := k.start(ctx, clients)
		if err != nil {
			return 0, 0, err
		}
		defer stop()
		args = append(args, "--dsn", dsn)
	}
	text := fmt.Sprintf("name: rss-%s\ntarget: {kind: %s%s}\nduration: %ds\nworkloads:\n  - name: many\n    clients: %d\n    scripts:\n      - inline: |\n%s\n",
		k.name, k.name, settings, seconds, clients, indent(k.script, "          "))
	if err := os.WriteFile(args[1], []byte(text), 0o600); err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	var peakKB atomic.Int64
	done := make(chan struct{})
	go func() {
		status := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "status")
		for {
			if kb, ok := vmHWM(status); ok {
				peakKB.Store(max(peakKB.Load(), kb))
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	if err != nil {
		return 0, 0, fmt.Errorf("firedrill run: %v\n%s", err, out.String())
	}
	if _, rss, ok := benchkit.Usage(cmd); ok {
		maxRSSMB = float64(rss) / 1024
	}
	if os.Getenv("RSS_SHOW_OUTPUT") != "" {
		os.Stderr.Write(out.Bytes())
	}
	return float64(peakKB.Load()) / 1024, maxRSSMB, nil
}

// vmHWM reads a process's peak resident set (kB) from its status file.
func vmHWM(status string) (int64, bool) {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

func startPostgres(ctx context.Context, clients int) (string, func() error, error) {
	inst, err := postgres.Start(ctx, postgres.Options{Settings: map[string]string{"max_connections": strconv.Itoa(clients + 100)}, Progress: os.Stderr})
	if err != nil {
		return "", nil, err
	}
	dsn := fmt.Sprintf("postgres://%s@/%s?host=%s&port=%d&sslmode=disable",
		url.PathEscape(inst.User()), url.PathEscape(inst.Database()), url.QueryEscape(inst.Host()), inst.Port())
	return dsn, inst.Stop, nil
}

func startMariaDB(ctx context.Context, clients int) (string, func() error, error) {
	inst, err := mariadb.Start(ctx, mariadb.Options{Settings: map[string]string{"max_connections": strconv.Itoa(clients + 100), "skip_log_bin": ""}, Progress: os.Stderr})
	if err != nil {
		return "", nil, err
	}
	dsn := (&url.URL{Scheme: "mysql", User: url.UserPassword(inst.User(), inst.Password()), Host: inst.TCPAddr(), Path: "/" + inst.Database()}).String()
	return dsn, inst.Stop, nil
}

func startRedis(ctx context.Context, clients int) (string, func() error, error) {
	inst, err := redis.Start(ctx, redis.Options{Settings: map[string]string{"maxclients": strconv.Itoa(clients + 100)}, Progress: os.Stderr})
	if err != nil {
		return "", nil, err
	}
	u := &url.URL{Scheme: "redis", Host: inst.Addr()}
	if p := inst.Password(); p != "" {
		u.User = url.UserPassword("default", p)
	}
	return u.String(), inst.Stop, nil
}
