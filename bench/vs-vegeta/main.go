// Command vs-vegeta measures firedrill's open model against vegeta
// (github.com/tsenart/vegeta/v12, its library, the attack `vegeta attack`
// runs) on one local server with a known injected delay: the same rate,
// keep-alive connections and time, run alternately (pairs), at each
// thread count (firedrill -j, vegeta's GOMAXPROCS), and prints for each
// tool the rate achieved against the rate asked, the latency percentiles
// (p50, p90, p99) and the client CPU time per request (from the child
// process's rusage). Rates are counted over the span each tool sent in:
// vegeta's attack duration, firedrill's run duration (its schedule ends
// there; the wait for the last replies is not sending time).
//
// The server is a Go net/http server built for the bench
// (bench/internal/httpbench), which waits -delay (default 10 ms) before
// each 13-byte reply: at a rate well under its capacity both tools should
// see that delay plus a little, and agree. The two pace differently:
// vegeta sends at a constant interval, firedrill draws Poisson arrivals
// (as pgbench -R does) and measures each request from its intended start,
// so its percentiles include any lag of its own schedule (coordinated
// omission corrected); vegeta's start when the request is sent.
//
// A Poisson schedule's count over a run is itself a draw: N arrivals
// spread by √N (±1.1 % at 8,000), and one seed draws the same count every
// run (seed 1 at -j 1, 1,000/s for 8 s: 7,840, −2.0 %). So each pair runs
// firedrill with a seed of its own (the pair's number), and the bench
// prints beside firedrill's rate the count its schedule asked for
// (engine.ScheduledStarts): the rate against the schedule is the
// engine's accuracy, the schedule against the rate asked is the draw.
//
// vegeta brings dependencies of its own, so this bench is a module of its
// own (bench/vs-vegeta/go.mod), built against the firedrill beside it:
//
//	cd bench/vs-vegeta && go run . [-pairs 3] [-seconds 10] [-rate 1000] [-delay 10ms] [-connections 50] [-threads 1,2]
package main

import (
	"bytes"
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
	"github.com/firedrill/firedrill/bench/internal/httpbench"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func main() {
	serve := flag.Bool("serve", false, "internal: run the bench server")
	child := flag.String("child", "", "internal: run one side (firedrill or vegeta) and print its result as JSON")
	url := flag.String("url", "", "internal (-child): the server's URL")
	threads := flag.Int("j", 1, "internal (-child): firedrill's event loops, vegeta's GOMAXPROCS")
	seed := flag.Uint64("seed", 1, "internal (-child): firedrill's random seed (its Poisson schedule)")
	pairs := flag.Int("pairs", 3, "vegeta/firedrill pairs per thread count")
	seconds := flag.Float64("seconds", 10, "duration of each run")
	rate := flag.Float64("rate", 1000, "requests per second asked of both")
	connections := flag.Int("connections", 50, "keep-alive connections (vegeta's -connections and -workers; firedrill's clients)")
	threadList := flag.String("threads", "1,2", "comma-separated thread counts")
	delay := flag.Duration("delay", 10*time.Millisecond, "time the server waits before each reply")
	flag.Parse()
	load := httpbench.Load{URL: *url, Clients: *connections, Threads: *threads,
		Duration: time.Duration(*seconds * float64(time.Second)), Rate: *rate, Seed: *seed}
	switch {
	case *serve:
		if err := httpbench.Serve("127.0.0.1:0", *delay, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "vs-vegeta -serve:", err)
			os.Exit(1)
		}
		return
	case *child != "":
		var res httpbench.Result
		var err error
		switch *child {
		case "firedrill":
			res, err = httpbench.Firedrill(load)
		case "vegeta":
			res, err = attack(load)
		default:
			err = fmt.Errorf("unknown side %q", *child)
		}
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(res)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "vs-vegeta -child %s: %v\n", *child, err)
			os.Exit(1)
		}
		return
	}
	js, err := benchkit.Threads(*threadList)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vs-vegeta:", err)
		os.Exit(2)
	}
	if err := run(*pairs, *seconds, *rate, *connections, js, *delay); err != nil {
		fmt.Fprintln(os.Stderr, "vs-vegeta:", err)
		os.Exit(1)
	}
}

// attack is vegeta's side: its attacker at a constant rate, keep-alive,
// as many workers as connections (so that it never lacks one to send
// with at this delay), its metrics as `vegeta report` computes them.
func attack(l httpbench.Load) (httpbench.Result, error) {
	atk := vegeta.NewAttacker(vegeta.KeepAlive(true), vegeta.Connections(l.Clients), vegeta.MaxConnections(l.Clients),
		vegeta.Workers(uint64(l.Clients)), vegeta.MaxWorkers(uint64(l.Clients)), vegeta.Redirects(vegeta.NoFollow))
	targeter := vegeta.NewStaticTargeter(vegeta.Target{Method: "GET", URL: l.URL + "/"})
	var m vegeta.Metrics
	for res := range atk.Attack(targeter, vegeta.Rate{Freq: int(l.Rate), Per: time.Second}, l.Duration, "vs-vegeta") {
		m.Add(res)
	}
	m.Close()
	failed := m.Requests - uint64(float64(m.Requests)*m.Success+0.5)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return httpbench.Result{
		Requests: int64(m.Requests - failed), Failed: int64(failed), Seconds: (m.Duration + m.Wait).Seconds(), SendSeconds: m.Duration.Seconds(),
		MeanMS: ms(m.Latencies.Mean), P50MS: ms(m.Latencies.P50), P90MS: ms(m.Latencies.P90), P99MS: ms(m.Latencies.P99), MaxMS: ms(m.Latencies.Max),
	}, nil
}

func run(pairs int, seconds, rate float64, connections int, threads []int, delay time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	srv, err := httpbench.StartServer(self, []string{"-serve", "-delay", delay.String()}, delay)
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Printf("server: Go net/http built for the bench (%s), injected delay %s; %.0f requests/s asked, %d keep-alive connections, %.0f s per run, %d pairs; machine: %d CPUs, load average %s\n\n",
		srv.URL(), delay, rate, connections, seconds, pairs, benchkit.NumCPU(), loadAverage())
	common := []string{"-url", srv.URL(), "-rate", strconv.FormatFloat(rate, 'f', -1, 64), "-connections", strconv.Itoa(connections),
		"-seconds", strconv.FormatFloat(seconds, 'f', -1, 64)}
	for _, j := range threads {
		fmt.Printf("GET / at %.0f/s (vegeta attack -rate %.0f/s -connections %d -workers %d, GOMAXPROCS=%d; firedrill rate: %.0f, -j %d, %d clients, seed = pair):\n",
			rate, rate, connections, connections, j, rate, j, connections)
		args := append([]string{"-j", strconv.Itoa(j)}, common...)
		var vs, fs []side
		for p := range pairs {
			order := []string{"vegeta", "firedrill"}
			if p%2 == 1 {
				slices.Reverse(order)
			}
			var got [2]side
			for _, name := range order {
				s, err := measure(self, name, j, rate, append(args, "-seed", strconv.Itoa(p+1)))
				if err != nil {
					return err
				}
				got[slices.Index([]string{"vegeta", "firedrill"}, name)] = s
			}
			vs, fs = append(vs, got[0]), append(fs, got[1])
			fmt.Printf("  pair %d:\n", p+1)
			for _, s := range got {
				fmt.Printf("    %-9s %s\n", s.name, s.line(rate))
			}
		}
		v, f := medianSide(vs), medianSide(fs)
		fmt.Printf("  medians:\n    %-9s %s\n    %-9s %s\n", "vegeta", v.line(rate), "firedrill", f.line(rate))
		fmt.Printf("  firedrill/vegeta: p50 %.3f, p90 %.3f, p99 %.3f; rate off target: vegeta %+.2f %%, firedrill %+.2f %% (its schedules' draws %+.2f %%; firedrill against its schedule %+.2f %%) (target: within 1 %%, percentiles agreeing)\n\n",
			f.P50MS/v.P50MS, f.P90MS/v.P90MS, f.P99MS/v.P99MS, v.offPct(rate), f.offPct(rate), f.drawPct, f.schedPct)
	}
	return nil
}

// side is one tool's run.
type side struct {
	httpbench.Result
	name        string
	cpuPerReqUS float64
	// drawPct is how far firedrill's schedule was from the rate asked,
	// schedPct how far its requests were from its schedule, in %.
	drawPct, schedPct float64
}

// sendSeconds is the span the side sent over.
func (s side) sendSeconds() float64 {
	if s.SendSeconds > 0 {
		return s.SendSeconds
	}
	return s.Seconds
}

// rateAchieved is the requests answered per second sent.
func (s side) rateAchieved() float64 { return float64(s.Requests+s.Failed) / s.sendSeconds() }

// offPct is how far the achieved rate was from the one asked, in %.
func (s side) offPct(rate float64) float64 { return 100 * (s.rateAchieved() - rate) / rate }

func (s side) line(rate float64) string {
	sched := ""
	if s.name == "firedrill" {
		sched = fmt.Sprintf("  schedule %+.2f %%, sent %+.2f %% of it", s.drawPct, s.schedPct)
	}
	return fmt.Sprintf("%8.1f req/s (%+.2f %%)  p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms  max %7.2f ms  failed %d  (%.1f µs CPU/req)%s",
		s.rateAchieved(), s.offPct(rate), s.P50MS, s.P90MS, s.P99MS, s.MaxMS, s.Failed, s.cpuPerReqUS, sched)
}

// medianSide is each figure's median over the pairs.
func medianSide(ss []side) side {
	med := func(f func(side) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		return benchkit.Median(v)
	}
	out := side{name: ss[0].name}
	out.Seconds = 1
	out.Requests = int64(med(side.rateAchieved) + 0.5)
	out.P50MS = med(func(s side) float64 { return s.P50MS })
	out.P90MS = med(func(s side) float64 { return s.P90MS })
	out.P99MS = med(func(s side) float64 { return s.P99MS })
	out.MaxMS = med(func(s side) float64 { return s.MaxMS })
	out.cpuPerReqUS = med(func(s side) float64 { return s.cpuPerReqUS })
	out.drawPct = med(func(s side) float64 { return s.drawPct })
	out.schedPct = med(func(s side) float64 { return s.schedPct })
	return out
}

// measure runs one side as a child, vegeta with GOMAXPROCS=j.
func measure(bin, name string, j int, rate float64, args []string) (side, error) {
	cmd := exec.Command(bin, append([]string{"-child", name}, args...)...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(j))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return side{}, fmt.Errorf("%s child %s: %v\n%s", name, strings.Join(args, " "), err, errOut.String())
	}
	s := side{name: name}
	if err := json.Unmarshal(out.Bytes(), &s.Result); err != nil || s.Requests == 0 || s.Seconds <= 0 {
		return side{}, fmt.Errorf("%s child: no result (%v):\n%s%s", name, err, out.String(), errOut.String())
	}
	cpu, _, _ := benchkit.Usage(cmd)
	s.cpuPerReqUS = cpu / float64(s.Requests+s.Failed)
	if s.Scheduled > 0 {
		s.drawPct = 100 * (float64(s.Scheduled) - rate*s.SendSeconds) / (rate * s.SendSeconds)
		s.schedPct = 100 * float64(s.Requests+s.Failed-s.Scheduled) / float64(s.Scheduled)
	}
	return s, nil
}

// loadAverage is the machine's 1-minute load average, to say how busy it
// was.
func loadAverage() string {
	if load := benchkit.LoadAverage(1); load != "" {
		return load
	}
	return "unknown"
}
