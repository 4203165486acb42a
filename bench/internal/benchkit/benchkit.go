// Package benchkit holds what the bench/vs-* commands share: running
// firedrill and the tool it is compared with in alternating pairs,
// printing each pair and the medians, a child's client CPU time from its
// rusage, and what the machine was like.
package benchkit

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Comparison names the tool firedrill is compared with and the units of
// the lines RunPairs prints.
type Comparison struct {
	Tool     string // "pgbench"
	Rate     string // the rate's unit: "tps", "ops/s"
	RateVerb string // how a rate is printed: "%9.1f"
	CPUVerb  string // how µs of CPU are printed: "%.1f"
	Unit     string // what a rate counts, short: "tx" in "µs CPU/tx"
	UnitName string // the same, in the medians' line: "median client CPU per tx"
}

// Measure is one run of one side: its rate, its client's CPU time per
// unit (µs, user+system) and how often per unit the client blocked
// (voluntary context switches): on a machine loaded by others the rate
// is noise, and these two say what the client cost.
type Measure struct {
	Rate         float64
	CPUPerUnit   float64
	WaitsPerUnit float64
	// ServerCPUPerUnit is the server's CPU time per unit (µs) during the
	// run, where the bench can read it (a server process of its own; 0
	// otherwise): on few cores the server is often the bottleneck, and
	// how a client sends changes what the server spends.
	ServerCPUPerUnit float64
	// ServerWaitsPerUnit is how often per unit the server's threads
	// blocked (voluntary context switches) during the run, with
	// ServerCPUPerUnit: a server woken for each request costs more
	// than one finding many ready at each wakeup.
	ServerWaitsPerUnit float64
}

// RunPairs runs pairs of the tool and firedrill, prints each pair's rates,
// CPU and ratio firedrill/tool, then the median ratio (with the target it
// should reach) and the median CPU of each side. The order alternates
// (the tool first in the first pair), so that a drift of the server over
// the runs (bloat, checkpoints, a neighbour's load) does not always fall
// on the same side.
func (c Comparison) RunPairs(w io.Writer, pairs int, target string, tool, firedrill func() (Measure, error)) error {
	pairLine := "  pair %d: %s " + c.RateVerb + " %s (" + c.CPUVerb + " µs CPU, %.3f waits/%s)   firedrill " +
		c.RateVerb + " %s (" + c.CPUVerb + " µs CPU, %.3f waits/%s)   ratio %.3f\n"
	var ratios, toolCPU, fdCPU, toolWaits, fdWaits, toolServer, fdServer, toolServerWaits, fdServerWaits []float64
	for p := range pairs {
		var tm, fm Measure
		var err error
		for _, toolFirst := range [2]bool{p%2 == 0, p%2 != 0} {
			if toolFirst {
				tm, err = tool()
			} else {
				fm, err = firedrill()
			}
			if err != nil {
				return err
			}
		}
		ratios = append(ratios, fm.Rate/tm.Rate)
		toolCPU = append(toolCPU, tm.CPUPerUnit)
		fdCPU = append(fdCPU, fm.CPUPerUnit)
		toolWaits = append(toolWaits, tm.WaitsPerUnit)
		fdWaits = append(fdWaits, fm.WaitsPerUnit)
		fmt.Fprintf(w, pairLine, p+1, c.Tool, tm.Rate, c.Rate, tm.CPUPerUnit, tm.WaitsPerUnit, c.Unit,
			fm.Rate, c.Rate, fm.CPUPerUnit, fm.WaitsPerUnit, c.Unit, fm.Rate/tm.Rate)
		if tm.ServerCPUPerUnit > 0 || fm.ServerCPUPerUnit > 0 {
			toolServer, fdServer = append(toolServer, tm.ServerCPUPerUnit), append(fdServer, fm.ServerCPUPerUnit)
			toolServerWaits, fdServerWaits = append(toolServerWaits, tm.ServerWaitsPerUnit), append(fdServerWaits, fm.ServerWaitsPerUnit)
			fmt.Fprintf(w, "          server per %s: with %s "+c.CPUVerb+" µs CPU, %.3f waits; with firedrill "+c.CPUVerb+" µs CPU, %.3f waits\n",
				c.Unit, c.Tool, tm.ServerCPUPerUnit, tm.ServerWaitsPerUnit, fm.ServerCPUPerUnit, fm.ServerWaitsPerUnit)
		}
	}
	fmt.Fprintf(w, "  median ratio firedrill/%s: %.3f (target %s); median client CPU per %s: %s "+c.CPUVerb+" µs, firedrill "+c.CPUVerb+" µs; blocking waits: %s %.3f, firedrill %.3f\n",
		c.Tool, Median(ratios), target, c.UnitName, c.Tool, Median(toolCPU), Median(fdCPU), c.Tool, Median(toolWaits), Median(fdWaits))
	if len(toolServer) > 0 {
		fmt.Fprintf(w, "  median server per %s: with %s "+c.CPUVerb+" µs CPU, %.3f waits; with firedrill "+c.CPUVerb+" µs CPU, %.3f waits\n",
			c.UnitName, c.Tool, Median(toolServer), Median(toolServerWaits), Median(fdServer), Median(fdServerWaits))
	}
	fmt.Fprintln(w)
	return nil
}

// Usage is a finished child's client CPU time (user+system, µs) and peak
// resident memory (KiB), from its rusage; ok is false where there is none.
func Usage(cmd *exec.Cmd) (cpuMicros float64, maxRSSKB int64, ok bool) {
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, false
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1000, ru.Maxrss, true
}

// Waits is how often a finished child blocked (its voluntary context
// switches, from its rusage), 0 where there is no rusage.
func Waits(cmd *exec.Cmd) int64 {
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return ru.Nvcsw
}

// Median is the middle of v (the mean of the two middle values when
// their number is even), 0 for none.
func Median(v []float64) float64 {
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

// Threads reads a -threads list ("1,2"): thread counts of at least one.
func Threads(list string) ([]int, error) {
	var threads []int
	for _, f := range strings.Split(list, ",") {
		j, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || j < 1 {
			return nil, fmt.Errorf("-threads: %q is not a thread count", f)
		}
		threads = append(threads, j)
	}
	return threads, nil
}

// NumCPU is the machine's processor count from /proc/cpuinfo, 0 if unknown.
func NumCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

// LoadAverage is the machine's first n load averages (1, 5, 15 minutes)
// joined by spaces, to say how busy it was; "" if unknown.
func LoadAverage(n int) string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < n {
		return ""
	}
	return strings.Join(f[:n], " ")
}

// CPUProfile starts a CPU profile of the calling process into path (for a
// bench's -cpuprofile), exiting with tool's name in the message when it
// cannot; the returned function stops it. An empty path profiles nothing.
func CPUProfile(tool, path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s -cpuprofile: %v\n", tool, err)
		os.Exit(1)
	}
	return pprof.StopCPUProfile
}
