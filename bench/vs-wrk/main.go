// Command vs-wrk measures firedrill's HTTP client against wrk (Debian's
// wrk 4.1) on one local server: the closed model, keep-alive, the same
// connections (50) and time, run alternately (pairs), at each thread
// count (firedrill -j and wrk -t), and prints each tool's requests per
// second, the ratio firedrill/wrk and each tool's client CPU time per
// request (from the child process's rusage).
//
// The server is a Go net/http server built for the bench
// (bench/internal/httpbench: a 13-byte "Hello, World!" body, after an
// optional injected -delay), run as a child process of its own so that
// its CPU is not counted as a client's. On a machine with few cores the
// server, wrk and firedrill share them: both tools meet the same server,
// and the ratio is what it says.
//
// The firedrill side is this program run again as a child (-child): the
// engine with db/http/client on its event loops, exactly what a workload
// of `firedrill run` executes, without the samplers, so that its CPU is
// the client's alone. Each of its 50 clients holds one keep-alive
// connection and sends `GET /` as soon as the last reply is read, as
// each of wrk's connections does. Both send the same request bytes (wrk
// is given firedrill's User-Agent with -H): the server's CPU per request,
// most of what the ratio measures on few cores, grows with its headers.
//
// -firedrill BIN runs firedrill's side from another build of this
// program (BIN -child ...), to compare two builds against the same wrk:
// build one from each tree (go build -o /tmp/vs-wrk-old ./bench/vs-wrk)
// and alternate runs with each. -against BIN puts another build's
// firedrill side in wrk's place, alternating the two builds on one
// server: wrk's own swings (±10 % from run to run on 2 cores) are then
// out of the A/B.
//
//	go run ./bench/vs-wrk [-pairs 3] [-seconds 10] [-connections 50] [-threads 1,2] [-delay 0] [-firedrill BIN] [-against BIN]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/bench/internal/benchkit"
	"github.com/firedrill/firedrill/bench/internal/httpbench"
)

func main() {
	serve := flag.Bool("serve", false, "internal: run the bench server")
	child := flag.Bool("child", false, "internal: run firedrill's side and print its result as JSON")
	url := flag.String("url", "", "internal (-child): the server's URL")
	threads := flag.Int("j", 1, "internal (-child): event loops")
	cpuProfile := flag.String("cpuprofile", "", "internal (-child): write a CPU profile of firedrill's side to this file")
	pairs := flag.Int("pairs", 3, "wrk/firedrill pairs per thread count")
	seconds := flag.Float64("seconds", 10, "duration of each run")
	connections := flag.Int("connections", 50, "keep-alive connections (wrk -c; firedrill's clients)")
	threadList := flag.String("threads", "1,2", "comma-separated thread counts: firedrill -j and wrk -t")
	delay := flag.Duration("delay", 0, "time the server waits before each reply")
	sideBin := flag.String("firedrill", "", "a build of this program whose -child runs firedrill's side (default: this one)")
	against := flag.String("against", "", "a build of this program whose firedrill side takes wrk's place: an A/B of two builds on one server")
	flag.Parse()
	switch {
	case *serve:
		if err := httpbench.Serve("127.0.0.1:0", *delay, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "vs-wrk -serve:", err)
			os.Exit(1)
		}
		return
	case *child:
		stopProfile := benchkit.CPUProfile("vs-wrk", *cpuProfile)
		defer stopProfile()
		res, err := httpbench.Firedrill(httpbench.Load{URL: *url, Clients: *connections, Threads: *threads,
			Duration: time.Duration(*seconds * float64(time.Second))})
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(res)
		}
		if err != nil {
			stopProfile()
			fmt.Fprintln(os.Stderr, "vs-wrk -child:", err)
			os.Exit(1)
		}
		return
	}
	js, err := benchkit.Threads(*threadList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vs-wrk:", err)
		os.Exit(2)
	}
	if err := run(*pairs, *seconds, *connections, js, *delay, *sideBin, *against); err != nil {
		fmt.Fprintln(os.Stderr, "vs-wrk:", err)
		os.Exit(1)
	}
}

func run(pairs int, seconds float64, connections int, threads []int, delay time.Duration, sideBin, against string) error {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		return fmt.Errorf("wrk not found (Debian's wrk; make setup installs it): %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if sideBin == "" {
		sideBin = self
	}
	srv, err := httpbench.StartServer(self, []string{"-serve", "-delay", delay.String()}, delay)
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Printf("server: Go net/http built for the bench (%s), %q, injected delay %s; %d keep-alive connections, %.0f s per run, %d pairs; machine: %d CPUs, load average %s\n",
		srv.URL(), "Hello, World!", delay, connections, seconds, pairs, benchkit.NumCPU(), loadAverage())
	fmt.Printf("firedrill's side: %s -child\n\n", sideBin)
	secs := strconv.FormatFloat(seconds, 'f', -1, 64)
	for _, j := range threads {
		if connections < j {
			return fmt.Errorf("%d connections for %d threads: wrk needs at least one per thread", connections, j)
		}
		fmt.Printf("GET / (wrk -t %d -c %d -H 'User-Agent: %s'; firedrill -j %d, %d clients):\n", j, connections, httpbench.UserAgent, j, connections)
		wrkArgs := []string{"-t", strconv.Itoa(j), "-c", strconv.Itoa(connections), "-d", secs + "s",
			"-H", "User-Agent: " + httpbench.UserAgent, srv.URL() + "/"}
		fdArgs := []string{"-child", "-url", srv.URL(), "-connections", strconv.Itoa(connections), "-j", strconv.Itoa(j), "-seconds", secs}
		versus, other := versusWrk, func() (benchkit.Measure, error) { return measureWrk(srv, wrk, wrkArgs) }
		if against != "" {
			fmt.Printf("  (A/B: %s -child in wrk's place)\n", against)
			versus.Tool = "other"
			other = func() (benchkit.Measure, error) { return measureChild(srv, against, fdArgs) }
		}
		err := versus.RunPairs(os.Stdout, pairs, ">= 1", other,
			func() (benchkit.Measure, error) { return measureChild(srv, sideBin, fdArgs) })
		if err != nil {
			return err
		}
	}
	return nil
}

// versusWrk is how a pair of runs is printed.
var versusWrk = benchkit.Comparison{Tool: "wrk", Rate: "req/s", RateVerb: "%9.0f", CPUVerb: "%.2f", Unit: "req", UnitName: "request"}

// wrkRate and wrkRequests read wrk's summary: "Requests/sec:  12345.67"
// and "123456 requests in 10.00s, …".
var (
	wrkRate     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkRequests = regexp.MustCompile(`(?m)^\s*([0-9]+) requests in`)
	wrkErrors   = regexp.MustCompile(`(Socket errors|Non-2xx or 3xx responses):.*`)
)

// measureWrk runs wrk and reads its rate and request count.
func measureWrk(srv *httpbench.Server, bin string, args []string) (benchkit.Measure, error) {
	before, err := readServer(srv)
	if err != nil {
		return benchkit.Measure{}, err
	}
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return benchkit.Measure{}, fmt.Errorf("wrk %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	rate, requests := wrkRate.FindStringSubmatch(out.String()), wrkRequests.FindStringSubmatch(out.String())
	if rate == nil || requests == nil {
		return benchkit.Measure{}, fmt.Errorf("wrk: no rate in its output:\n%s", out.String())
	}
	if e := wrkErrors.FindString(out.String()); e != "" {
		return benchkit.Measure{}, fmt.Errorf("wrk: %s", e)
	}
	rps, _ := strconv.ParseFloat(rate[1], 64)
	n, _ := strconv.ParseFloat(requests[1], 64)
	cpu, _, _ := benchkit.Usage(cmd)
	m := benchkit.Measure{Rate: rps, CPUPerUnit: cpu / n, WaitsPerUnit: float64(benchkit.Waits(cmd)) / n}
	return m, addServer(&m, srv, before, n)
}

// measureChild runs firedrill's side, this program with -child.
func measureChild(srv *httpbench.Server, bin string, args []string) (benchkit.Measure, error) {
	before, err := readServer(srv)
	if err != nil {
		return benchkit.Measure{}, err
	}
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return benchkit.Measure{}, fmt.Errorf("firedrill child %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	var r httpbench.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Requests == 0 || r.Seconds <= 0 {
		return benchkit.Measure{}, fmt.Errorf("firedrill child: no result (%v):\n%s%s", err, out.String(), errOut.String())
	}
	if r.Failed > 0 {
		return benchkit.Measure{}, fmt.Errorf("firedrill child: %d requests failed", r.Failed)
	}
	cpu, _, _ := benchkit.Usage(cmd)
	n := float64(r.Requests)
	m := benchkit.Measure{Rate: n / r.Seconds, CPUPerUnit: cpu / n, WaitsPerUnit: float64(benchkit.Waits(cmd)) / n}
	return m, addServer(&m, srv, before, n)
}

// serverUse is the server's use at a run's start: its CPU time and how
// often its threads had blocked.
type serverUse struct {
	cpu   time.Duration
	waits int64
}

func readServer(srv *httpbench.Server) (serverUse, error) {
	cpu, err := srv.CPU()
	if err != nil {
		return serverUse{}, err
	}
	waits, err := srv.Waits()
	return serverUse{cpu, waits}, err
}

// addServer adds the server's CPU (µs) and blocking waits per request
// over a run to m, from its use before: on few cores the server is the
// bottleneck, and what a client's way of sending costs the server is
// most of the ratio.
func addServer(m *benchkit.Measure, srv *httpbench.Server, before serverUse, requests float64) error {
	after, err := readServer(srv)
	if err != nil {
		return err
	}
	m.ServerCPUPerUnit = float64((after.cpu - before.cpu).Microseconds()) / requests
	m.ServerWaitsPerUnit = float64(after.waits-before.waits) / requests
	return nil
}

// loadAverage is the machine's 1-minute load average, to say how busy it
// was.
func loadAverage() string {
	if load := benchkit.LoadAverage(1); load != "" {
		return load
	}
	return "unknown"
}
