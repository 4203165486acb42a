// Command vs-redis-benchmark measures firedrill's Redis client against
// redis-benchmark on one throwaway redis-server: SET and GET with the same
// clients, key and value, without pipelining and with 16 commands per
// pipeline, run alternately (pairs), and prints each tool's commands per
// second, the ratio firedrill/redis-benchmark and each tool's client CPU
// time per command (from the child process's rusage).
//
// The firedrill side is this program run again as a child (-child): the
// engine with target/redis on its event loops, exactly what a workload
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
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/instance/redis"
	"github.com/firedrill/firedrill/script"
	redistarget "github.com/firedrill/firedrill/target/redis"
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
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "vs-redis-benchmark -cpuprofile:", err)
				os.Exit(1)
			}
			defer pprof.StopCPUProfile()
		}
		if err := runChild(*addr, *caseName, *clients, *threads, *seconds); err != nil {
			pprof.StopCPUProfile()
			fmt.Fprintln(os.Stderr, "vs-redis-benchmark -child:", err)
			os.Exit(1)
		}
		return
	}
	var js []int
	for _, f := range strings.Split(*threadList, ",") {
		j, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || j < 1 {
			fmt.Fprintf(os.Stderr, "vs-redis-benchmark: -threads: %q is not a thread count\n", f)
			os.Exit(2)
		}
		js = append(js, j)
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
		inst.Version(), clients, seconds, pairs, numCPU(), loadAverage())
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
	var ratios, rbCPU, fdCPU []float64
	for p := 0; p < pairs; p++ {
		var rb, fd *measurement
		var err error
		for _, first := range [2]bool{p%2 == 0, p%2 != 0} {
			if first {
				n := int(rate * seconds)
				rb, err = measureBenchmark(bench, append(rbArgs, "-n", strconv.Itoa(n)), n)
				if err == nil {
					rate = rb.opsPerSec
				}
			} else {
				fd, err = measureChild(self, fdArgs)
				if err == nil {
					rate = fd.opsPerSec
				}
			}
			if err != nil {
				return err
			}
		}
		ratios = append(ratios, fd.opsPerSec/rb.opsPerSec)
		rbCPU = append(rbCPU, rb.cpuPerOp)
		fdCPU = append(fdCPU, fd.cpuPerOp)
		fmt.Printf("  pair %d: redis-benchmark %10.0f ops/s (%.2f µs CPU/op)   firedrill %10.0f ops/s (%.2f µs CPU/op)   ratio %.3f\n",
			p+1, rb.opsPerSec, rb.cpuPerOp, fd.opsPerSec, fd.cpuPerOp, fd.opsPerSec/rb.opsPerSec)
	}
	fmt.Printf("  median ratio firedrill/redis-benchmark: %.3f (target >= 1); median client CPU per command: redis-benchmark %.2f µs, firedrill %.2f µs\n\n",
		median(ratios), median(rbCPU), median(fdCPU))
	return nil
}

// measurement is one run of one tool.
type measurement struct {
	opsPerSec float64
	cpuPerOp  float64 // µs of client CPU (user+system) per command
}

// childResult is what the firedrill child prints.
type childResult struct {
	Commands int64   `json:"commands"`
	Seconds  float64 `json:"seconds"`
}

func measureBenchmark(bin string, args []string, n int) (*measurement, error) {
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("redis-benchmark %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
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
		return nil, fmt.Errorf("redis-benchmark: no rate in its output:\n%s", out.String())
	}
	return &measurement{opsPerSec: rps, cpuPerOp: cpuMicros(cmd) / float64(n)}, nil
}

func measureChild(bin string, args []string) (*measurement, error) {
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("firedrill child %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	var r childResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Commands == 0 || r.Seconds <= 0 {
		return nil, fmt.Errorf("firedrill child: no result (%v):\n%s%s", err, out.String(), errOut.String())
	}
	return &measurement{opsPerSec: float64(r.Commands) / r.Seconds, cpuPerOp: cpuMicros(cmd) / float64(r.Commands)}, nil
}

// cpuMicros is a finished child's user+system CPU time in µs.
func cpuMicros(cmd *exec.Cmd) float64 {
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1000
	}
	return 0
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
	sc, err := script.ParseDialect(c.name+".redis", []byte(src), syms, script.Redis)
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

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

// loadAverage is the machine's 1-minute load average, to say how busy it
// was.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
