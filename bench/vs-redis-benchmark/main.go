// Command vs-redis-benchmark measures firedrill's Redis client against
// redis-benchmark on one throwaway redis-server: SET and GET with the same
// clients, key and value, without pipelining and with 16 commands per
// pipeline, run alternately (pairs), and prints each tool's commands per
// second, the ratio firedrill/redis-benchmark and each tool's client CPU
// time per command (from the child process's rusage).
//
// The firedrill side is this program run again as a child (-child): the
// engine with db/redis/client on its event loops, exactly what a workload
// of `firedrill run` executes, without the samplers, so that its CPU is
// the client's alone. A pipelined transaction is \startpipeline, 16 SETs
// (or GETs) and \endpipeline, counted as 16 commands, as redis-benchmark
// -P 16 counts them.
//
//	go run ./bench/vs-redis-benchmark [-pairs 3] [-seconds 10] [-clients 50] [-threads 1,2] [-cases set,get,set-P16,get-P16]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/bench/internal/benchkit"
	redistarget "github.com/firedrill/firedrill/db/redis/client"
	redis "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// benchCase is one command, with or without pipelining.
type benchCase struct {
	name     string
	command  string // redis-benchmark's -t test
	pipeline int    // commands per pipeline; 1 = none
}

var allCases = []benchCase{
	{"set", "set", 1},
	{"get", "get", 1},
	{"set-P16", "set", 16},
	{"get-P16", "get", 16},
}

// The key and value redis-benchmark's SET and GET use without -r and -d.
const (
	benchKey   = "key:__rand_int__"
	benchValue = "xxx"
)

func main() {
	child := flag.Bool("child", false, "internal: run firedrill's side and print its result as JSON")
	addr := flag.String("addr", "", "internal (-child): the server's host:port")
	pairs := flag.Int("pairs", 3, "redis-benchmark/firedrill pairs per case")
	seconds := flag.Float64("seconds", 10, "duration of each run")
	clients := flag.Int("clients", 50, "clients (redis-benchmark -c)")
	threadList := flag.String("threads", "1,2", "comma-separated thread counts: firedrill -j and redis-benchmark --threads, each case at every one")
	cases := flag.String("cases", "set,get,set-P16,get-P16", "cases to run")
	caseName := flag.String("case", "", "internal (-child): the case")
	threads := flag.Int("j", 1, "internal (-child): event loops")
	cpuProfile := flag.String("cpuprofile", "", "internal (-child): write a CPU profile of firedrill's side to this file")
	flag.Parse()
	if *child {
		stopProfile := benchkit.CPUProfile("vs-redis-benchmark", *cpuProfile)
		defer stopProfile()
		if err := runChild(*addr, *caseName, *clients, *threads, *seconds); err != nil {
			stopProfile()
			fmt.Fprintln(os.Stderr, "vs-redis-benchmark -child:", err)
			os.Exit(1)
		}
		return
	}
	js, err := benchkit.Threads(*threadList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vs-redis-benchmark:", err)
		os.Exit(2)
	}
	if err := run(*pairs, *seconds, *clients, js, strings.Split(*cases, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "vs-redis-benchmark:", err)
		os.Exit(1)
	}
}

func run(pairs int, seconds float64, clients int, threads []int, cases []string) error {
	bench, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return fmt.Errorf("redis-benchmark not found (Debian's redis-tools; scripts/setup.sh installs it): %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var selected []benchCase
	for _, name := range cases {
		i := slices.IndexFunc(allCases, func(c benchCase) bool { return c.name == name })
		if i < 0 {
			return fmt.Errorf("unknown case %q (have set, get, set-P16, get-P16)", name)
		}
		selected = append(selected, allCases[i])
	}
	ctx := context.Background()
	inst, err := redis.Start(ctx, redis.Options{Settings: map[string]string{"maxclients": "10000"}, Progress: os.Stderr})
	if err != nil {
		return err
	}
	defer inst.Stop()
	fmt.Printf("server: Redis %s (embedded, no persistence), %d clients, %.0f s per run, %d pairs; machine: %d CPUs, load average %s\n\n",
		inst.Version(), clients, seconds, pairs, benchkit.NumCPU(), loadAverage())
	for _, c := range selected {
		for _, j := range threads {
			if err := benchCaseAt(c, j, clients, pairs, seconds, bench, self, inst); err != nil {
				return err
			}
		}
	}
	return nil
}

// benchCaseAt runs one case at j threads: pairs of redis-benchmark and
// firedrill in alternating order, and prints each pair and the medians.
func benchCaseAt(c benchCase, j, clients, pairs int, seconds float64, bench, self string, inst *redis.Instance) error {
	rbArgs := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(inst.Port()), "-c", strconv.Itoa(clients),
		"-t", c.command, "-P", strconv.Itoa(c.pipeline), "--threads", strconv.Itoa(j), "--csv"}
	fdArgs := []string{"-child", "-addr", inst.Addr(), "-case", c.name, "-clients", strconv.Itoa(clients),
		"-j", strconv.Itoa(j), "-seconds", strconv.FormatFloat(seconds, 'f', -1, 64)}
	fmt.Printf("%s (redis-benchmark -t %s -c %d -P %d --threads %d; firedrill -j %d):\n", c.name, c.command, clients, c.pipeline, j, j)
	// redis-benchmark runs a number of requests, not a time: size it from
	// the last rate seen so that both tools run about as long.
	rate := 50_000.0 * float64(c.pipeline)
	return versusRedisBenchmark.RunPairs(os.Stdout, pairs, ">= 1",
		func() (benchkit.Measure, error) {
			n := int(rate * seconds)
			m, err := measureBenchmark(bench, append(rbArgs, "-n", strconv.Itoa(n)), n)
			if err == nil {
				rate = m.Rate
			}
			return m, err
		},
		func() (benchkit.Measure, error) {
			m, err := measureChild(self, fdArgs)
			if err == nil {
				rate = m.Rate
			}
			return m, err
		})
}

// versusRedisBenchmark is how a pair of runs is printed.
var versusRedisBenchmark = benchkit.Comparison{Tool: "redis-benchmark", Rate: "ops/s", RateVerb: "%10.0f", CPUVerb: "%.2f", Unit: "op", UnitName: "command"}

// childResult is what the firedrill child prints.
type childResult struct {
	Commands int64   `json:"commands"`
	Seconds  float64 `json:"seconds"`
}

// measureBenchmark runs redis-benchmark for n commands.
func measureBenchmark(bin string, args []string, n int) (benchkit.Measure, error) {
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return benchkit.Measure{}, fmt.Errorf("redis-benchmark %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	// --csv: a header, then "SET","123456.79",… per test.
	var rps float64
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 2 || strings.Trim(f[0], `"`) == "test" {
			continue
		}
		v, err := strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
		if err == nil {
			rps = v
		}
	}
	if rps == 0 {
		return benchkit.Measure{}, fmt.Errorf("redis-benchmark: no rate in its output:\n%s", out.String())
	}
	return benchkit.Measure{Rate: rps, CPUPerUnit: cpuMicros(cmd) / float64(n), WaitsPerUnit: float64(benchkit.Waits(cmd)) / float64(n)}, nil
}

// measureChild runs firedrill's side, this program with -child.
func measureChild(bin string, args []string) (benchkit.Measure, error) {
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return benchkit.Measure{}, fmt.Errorf("firedrill child %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	var r childResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Commands == 0 || r.Seconds <= 0 {
		return benchkit.Measure{}, fmt.Errorf("firedrill child: no result (%v):\n%s%s", err, out.String(), errOut.String())
	}
	return benchkit.Measure{Rate: float64(r.Commands) / r.Seconds, CPUPerUnit: cpuMicros(cmd) / float64(r.Commands), WaitsPerUnit: float64(benchkit.Waits(cmd)) / float64(r.Commands)}, nil
}

// cpuMicros is a finished child's user+system CPU time in µs.
func cpuMicros(cmd *exec.Cmd) float64 {
	cpu, _, _ := benchkit.Usage(cmd)
	return cpu
}

// runChild is firedrill's side of one run: the engine with the Redis
// target, for the given time.
func runChild(addr, caseName string, clients, threads int, seconds float64) error {
	i := slices.IndexFunc(allCases, func(c benchCase) bool { return c.name == caseName })
	if i < 0 {
		return fmt.Errorf("unknown case %q", caseName)
	}
	c := allCases[i]
	line := "SET " + benchKey + " " + benchValue + "\n"
	if c.command == "get" {
		line = "GET " + benchKey + "\n"
	}
	src := line
	if c.pipeline > 1 {
		src = "\\startpipeline\n" + strings.Repeat(line, c.pipeline) + "\\endpipeline\n"
	}
	syms := script.NewSymbols()
	sc, err := script.ParseDialect(c.name+".redis", []byte(src), syms, redisdialect.Script())
	if err != nil {
		return err
	}
	target, err := redistarget.NewTarget(redistarget.Config{Addr: addr, AppName: "firedrill-bench"})
	if err != nil {
		return err
	}
	res, err := engine.Run(context.Background(), target, engine.Config{
		Scripts: []*script.Script{sc}, Symbols: syms, Clients: clients, Threads: threads,
		Duration: time.Duration(seconds * float64(time.Second)), Stderr: os.Stderr, RandomSeed: 1,
	})
	if err != nil {
		return err
	}
	if res.AbortedClient > 0 {
		return fmt.Errorf("%d clients aborted", res.AbortedClient)
	}
	return json.NewEncoder(os.Stdout).Encode(childResult{
		Commands: res.Totals.Total.Count * int64(c.pipeline),
		Seconds:  res.Elapsed.Seconds(),
	})
}

// loadAverage is the machine's 1-minute load average, to say how busy it
// was.
func loadAverage() string {
	if load := benchkit.LoadAverage(1); load != "" {
		return load
	}
	return "unknown"
}
