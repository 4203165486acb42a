// Command vs-pgbench measures firedrill pgbench against the real pgbench on
// one throwaway server: same script, clients and duration, run alternately
// (at least 3 pairs), and prints the median TPS ratio firedrill/pgbench and
// each client's CPU time per transaction. It also checks the achieved rate
// under -R and the memory of 1,000 clients.
//
//	go run ./bench/vs-pgbench [-pairs 3] [-seconds 10] [-cases select-only,tpcb-like,...]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/bench/internal/benchkit"
	postgres "github.com/firedrill/firedrill/db/postgres/instance"
)

type benchCase struct {
	name   string
	args   []string // shared pgbench arguments
	target string   // what the README promises
}

var allCases = []benchCase{
	{"select-only", []string{"-S", "-c", "8"}, ">= 0.95"},
	{"select-only-prepared", []string{"-S", "-c", "8", "-M", "prepared"}, "(no target; pgbench's fastest mode)"},
	{"tpcb-like", []string{"-c", "8"}, ">= 0.98"},
	// -r: every command's latency is recorded (per-command histograms).
	{"select-only-r", []string{"-S", "-c", "8", "-r"}, "(no target; per-command reporting)"},
	{"tpcb-like-r", []string{"-c", "8", "-r"}, "(no target; per-command reporting)"},
}

func main() {
	pairs := flag.Int("pairs", 3, "pgbench/firedrill pairs per case")
	seconds := flag.Int("seconds", 10, "duration of each run")
	scale := flag.Int("scale", 10, "pgbench scale")
	cases := flag.String("cases", "select-only,select-only-prepared,tpcb-like,rate,memory", "cases to run")
	bin := flag.String("firedrill", "", "firedrill binary (default: build one)")
	threadList := flag.String("threads", "1", "comma-separated -j values: each case runs at every one (e.g. 1,2 on 2 cores)")
	flag.Parse()
	threads, err := benchkit.Threads(*threadList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vs-pgbench:", err)
		os.Exit(2)
	}
	if err := run(*pairs, *seconds, *scale, strings.Split(*cases, ","), *bin, threads); err != nil {
		fmt.Fprintln(os.Stderr, "vs-pgbench:", err)
		os.Exit(1)
	}
}

func run(pairs, seconds, scale int, cases []string, bin string, threads []int) error {
	ctx := context.Background()
	if bin == "" {
		dir, err := os.MkdirTemp("", "vs-pgbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "firedrill")
		build := exec.Command("go", "build", "-o", bin, "./cmd/firedrill")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building firedrill: %w", err)
		}
	}
	inst, err := postgres.Start(ctx, postgres.Options{Settings: map[string]string{"max_connections": "1100"}, Progress: os.Stderr})
	if err != nil {
		return err
	}
	defer inst.Stop()
	pgbench := filepath.Join(inst.BinDir(), "pgbench")
	conn := []string{"-h", inst.Host(), "-p", strconv.Itoa(inst.Port()), "-U", inst.User()}
	initArgs := append(append([]string{"-i", "-q", "-s", strconv.Itoa(scale)}, conn...), inst.Database())
	if out, err := exec.Command(pgbench, initArgs...).CombinedOutput(); err != nil {
		return fmt.Errorf("pgbench -i: %v\n%s", err, out)
	}
	fmt.Printf("server: PostgreSQL %s (embedded), scale %d, %d s per run, %d pairs; machine: %d CPUs\n\n", inst.Version(), scale, seconds, pairs, benchkit.NumCPU())

	for _, name := range cases {
		switch name {
		case "rate":
			if err := rateCase(bin, conn, inst.Database(), seconds); err != nil {
				return err
			}
			continue
		case "memory":
			if err := memoryCase(bin, conn, inst.Database(), seconds); err != nil {
				return err
			}
			continue
		}
		i := slices.IndexFunc(allCases, func(c benchCase) bool { return c.name == name })
		if i < 0 {
			return fmt.Errorf("unknown case %q", name)
		}
		for _, j := range threads {
			if err := benchCaseAt(allCases[i], j, pairs, seconds, bin, pgbench, conn, inst.Database()); err != nil {
				return err
			}
		}
	}
	return nil
}

// benchCaseAt runs one case at -j threads: pairs of pgbench and firedrill
// in alternating order, and prints each pair's ratio and the medians.
func benchCaseAt(c benchCase, threads, pairs, seconds int, bin, pgbench string, conn []string, database string) error {
	args := append(append([]string{}, c.args...), "-j", strconv.Itoa(threads), "-T", strconv.Itoa(seconds))
	if !strings.HasPrefix(c.name, "tpcb-like") {
		// tpcb-like keeps pgbench's vacuum before each run (both
		// tools vacuum the same tables and truncate the history), so
		// that a run does not inherit the previous one's bloat.
		args = append(args, "-n")
	}
	args = append(args, conn...)
	args = append(args, database)
	fmt.Printf("%s (pgbench %s -j %d):\n", c.name, strings.Join(c.args, " "), threads)
	return versusPgbench.RunPairs(os.Stdout, pairs, c.target,
		func() (benchkit.Measure, error) { return measured(measure(pgbench, args)) },
		func() (benchkit.Measure, error) { return measured(measure(bin, append([]string{"pgbench"}, args...))) })
}

// versusPgbench is how a pair of runs is printed.
var versusPgbench = benchkit.Comparison{Tool: "pgbench", Rate: "tps", RateVerb: "%9.1f", CPUVerb: "%.1f", Unit: "tx", UnitName: "tx"}

type measurement struct {
	tps      float64
	tx       float64
	cpuPerTx float64 // µs of client CPU (user+system) per transaction
	// waitsPerTx is how often per transaction the client blocked.
	waitsPerTx float64
	maxRSSKB   int64
	out        string
}

// measured is a run as RunPairs compares it.
func measured(m *measurement, err error) (benchkit.Measure, error) {
	if err != nil {
		return benchkit.Measure{}, err
	}
	return benchkit.Measure{Rate: m.tps, CPUPerUnit: m.cpuPerTx, WaitsPerUnit: m.waitsPerTx}, nil
}

var tpsRe = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
var txRe = regexp.MustCompile(`(?m)^number of transactions actually processed: ([0-9]+)`)

func measure(bin string, args []string) (*measurement, error) {
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out.String())
	}
	m := &measurement{out: out.String()}
	t := tpsRe.FindStringSubmatch(m.out)
	n := txRe.FindStringSubmatch(m.out)
	if t == nil || n == nil {
		return nil, fmt.Errorf("%s: no tps in output:\n%s", filepath.Base(bin), m.out)
	}
	m.tps, _ = strconv.ParseFloat(t[1], 64)
	m.tx, _ = strconv.ParseFloat(n[1], 64)
	if cpu, maxRSS, ok := benchkit.Usage(cmd); ok {
		m.cpuPerTx = cpu / m.tx
		m.waitsPerTx = float64(benchkit.Waits(cmd)) / m.tx
		m.maxRSSKB = maxRSS
	}
	return m, nil
}

// rateCase checks that -R achieves the target rate.
func rateCase(bin string, conn []string, db string, seconds int) error {
	fmt.Println("rate (-R 2000 -c 8 -S, achieved vs target):")
	for _, rate := range []int{2000, 5000} {
		args := append(append([]string{"pgbench", "-S", "-c", "8", "-n", "-R", strconv.Itoa(rate), "-T", strconv.Itoa(seconds)}, conn...), db)
		m, err := measure(bin, args)
		if err != nil {
			return err
		}
		fmt.Printf("  -R %d: achieved %.1f tps (%.2f%% off target)\n", rate, m.tps, 100*(m.tps-float64(rate))/float64(rate))
	}
	fmt.Println()
	return nil
}

// memoryCase measures the peak RSS of one firedrill process with 1,000 clients.
func memoryCase(bin string, conn []string, db string, seconds int) error {
	args := append(append([]string{"pgbench", "-S", "-c", "1000", "-n", "-T", strconv.Itoa(seconds)}, conn...), db)
	m, err := measure(bin, args)
	if err != nil {
		return err
	}
	fmt.Printf("memory: 1000 clients (-S -c 1000): peak RSS %.1f MB (target < 200 MB), %.1f tps\n\n", float64(m.maxRSSKB)/1024, m.tps)
	return nil
}
