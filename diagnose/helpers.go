package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// LoadWindow is the span of the run in which workloads measured
// something: from the first interval's start to the last one's end (the
// whole run when there are none).
func LoadWindow(run *timeline.Run) (from, to float64) {
	if len(run.Intervals) == 0 {
		return 0, RunEnd(run) + 1e-9
	}
	from, to = math.Inf(1), 0
	for _, iv := range run.Intervals {
		from = min(from, iv.Start)
		to = max(to, iv.End)
	}
	return from, to + 1e-9
}

// HostCPUs is the number of CPUs of the machine the server ran on: the
// host sampler's, the manifest's, or 1.
func HostCPUs(run *timeline.Run) float64 {
	if pts := run.Series(hostmetric.Host, hostmetric.CPUs); len(pts) > 0 && pts[len(pts)-1].V > 0 {
		return pts[len(pts)-1].V
	}
	if run.Manifest.Host.CPUs > 0 {
		return float64(run.Manifest.Host.CPUs)
	}
	return 1
}

// SumPoints adds up a series' values with from <= T < to.
func SumPoints(points []timeline.Point, from, to float64) float64 {
	sum := 0.0
	for _, p := range points {
		if p.T >= from && p.T < to {
			sum += p.V
		}
	}
	return sum
}

// HumanNum writes a count or rate for people: 1,234 / 56.7 / 0.012.
func HumanNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		s := fmt.Sprintf("%.0f", math.Abs(v))
		var b strings.Builder
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		if v < 0 {
			return "-" + b.String()
		}
		return b.String()
	case a >= 100 || a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.1:
		return fmt.Sprintf("%.2g", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// HumanMS writes a duration given in milliseconds: "0.4 ms", "38 ms", "2.3 s".
func HumanMS(ms float64) string {
	switch {
	case ms < 0:
		return "?"
	case ms < 1:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 10000:
		return fmt.Sprintf("%.1f s", ms/1000)
	case ms < 120000:
		return fmt.Sprintf("%.0f s", ms/1000)
	}
	return fmt.Sprintf("%.1f min", ms/60000)
}

// HumanPct writes a 0..1 ratio as a percentage: "87 %".
func HumanPct(r float64) string {
	p := r * 100
	switch {
	case p >= 10 || p == 0:
		return fmt.Sprintf("%.0f %%", p)
	case p >= 1:
		return fmt.Sprintf("%.1f %%", p)
	}
	return fmt.Sprintf("%.2g %%", p)
}

// OneLine squeezes a query onto one line and cuts it to n bytes.
func OneLine(q string, n int) string {
	s := strings.Join(strings.Fields(q), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Times says "once", "twice" or "N times".
func Times(n float64) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return HumanNum(n) + " times"
}

// Setting is a server setting as the manifest recorded it at the start, or def.
func Setting(run *timeline.Run, name, def string) string {
	if v, ok := run.Manifest.Settings[name]; ok && v != "" {
		return v
	}
	return def
}

// HumanBytes writes a size in bytes for people: "1.5 MiB".
func HumanBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
