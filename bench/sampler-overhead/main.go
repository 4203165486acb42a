// Command sampler-overhead measures what sampling costs the load: the same
// workload runs without samplers, with samplers every second and every
// 100 ms, alternating, on one throwaway server, and it prints the median
// TPS of each sampled run relative to the unsampled runs beside it
// (targets: ≥ 0.98 at 1 s, ≥ 0.95 at 100 ms). It also reports the
// generator's peak RSS and the run directory's size per hour of run.
//
//	go run ./bench/sampler-overhead [-rounds 3] [-seconds 20] [-clients 8]
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/firedrill/firedrill/backend"
	pgbackend "github.com/firedrill/firedrill/db/postgres"
	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
)

func main() {
	rounds := flag.Int("rounds", 3, "rounds of (none, 1 s, 100 ms)")
	seconds := flag.Int("seconds", 20, "duration of each run")
	clients := flag.Int("clients", 8, "clients of the select-only workload")
	flag.Parse()
	if err := run(*rounds, *seconds, *clients); err != nil {
		fmt.Fprintln(os.Stderr, "sampler-overhead:", err)
		os.Exit(1)
	}
}

type variant struct {
	name     string
	interval string // sample_interval; "" = no samplers
}

var variants = []variant{{"unsampled", ""}, {"1s", "1s"}, {"100ms", "100ms"}}

func run(rounds, seconds, clients int) error {
	ctx := context.Background()
	inst, err := postgres.Start(ctx, postgres.Options{Progress: os.Stderr})
	if err != nil {
		return err
	}
	defer inst.Stop()
	out, err := os.MkdirTemp("", "sampler-overhead-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)

	tps := map[string][]float64{}
	ratios := map[string][]float64{}
	bytesPerHour := map[string]float64{}
	for round := range rounds {
		got := map[string]float64{}
		for _, v := range variants {
			interval := v.interval
			if interval == "" {
				interval = "1s" // the tick still closes client intervals
			}
			setup := ""
			if round == 0 && v.name == "unsampled" {
				setup = "setup: {pgbench: {scale: 10}}\n"
			}
			src := fmt.Sprintf(`name: overhead-%s
%ssample_interval: %s
duration: %ds
workloads:
  - {name: w, clients: %d, mode: simple, scripts: [{builtin: select-only}]}
`, v.name, setup, interval, seconds, clients)
			sc, err := scenario.Parse("overhead.yaml", []byte(src), scenario.Options{}) // no events
			if err != nil {
				return err
			}
			dir := filepath.Join(out, fmt.Sprintf("%d-%s", round, v.name))
			res, err := runner.Run(ctx, runner.Options{Scenario: sc, Backends: backend.NewRegistry(pgbackend.New()), RunDir: dir, DSN: inst.ConnString(), NoSamplers: v.interval == ""})
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			got[v.name] = res.Summary.Workloads[0].TPS
			tps[v.name] = append(tps[v.name], got[v.name])
			size := dirSize(dir)
			bytesPerHour[v.name] = max(bytesPerHour[v.name], float64(size)/res.Summary.Duration*3600)
			fmt.Printf("round %d %-9s %9.0f tps  run dir %6.1f kB\n", round+1, v.name, got[v.name], float64(size)/1000)
		}
		for _, v := range variants[1:] {
			ratios[v.name] = append(ratios[v.name], got[v.name]/got["unsampled"])
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Println()
	fmt.Printf("%-9s %12s %12s %22s %s\n", "sampling", "median tps", "tps ratio", "run dir per hour", "target")
	fmt.Printf("%-9s %12.0f %12s %19.1f MB\n", "none", median(tps["unsampled"]), "1.00", bytesPerHour["unsampled"]/1e6)
	for _, v := range variants[1:] {
		target := "≥ 0.98"
		if v.name == "100ms" {
			target = "≥ 0.95"
		}
		fmt.Printf("%-9s %12.0f %12.3f %19.1f MB %s\n", v.name, median(tps[v.name]), median(ratios[v.name]), bytesPerHour[v.name]/1e6, target)
	}
	fmt.Printf("\npeak RSS of the generator (this process): %.0f MB (target for a 1-hour run at 1 s: < 300 MB)\n", float64(ru.Maxrss)/1024)
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
