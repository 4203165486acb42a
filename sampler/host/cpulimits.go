package host

import (
	"bufio"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// CPULimits are the bounds on the CPUs firedrill may use, read apart so a
// finding can say which one held it back: the host's online CPUs, the
// process's affinity mask, its cgroup's CPU quota and GOMAXPROCS (which
// Go sets from the smaller of the last two unless the environment says).
type CPULimits struct {
	Online     int     // CPUs online on the host (sysconf(_SC_NPROCESSORS_ONLN))
	Affinity   int     // CPUs in the process's affinity mask (sched_getaffinity); 0 unknown
	Quota      float64 // cores the cgroup's cpu.max (v2) or cfs quota (v1) allows; 0 none
	GOMAXPROCS int     // threads the Go scheduler runs at once
}

// ReadCPULimits reads the limits of the running process.
func ReadCPULimits() CPULimits {
	return CPULimits{
		Online:     OnlineCPUs(),
		Affinity:   affinityCPUs(),
		Quota:      cgroupQuota("/proc/self/cgroup", "/sys/fs/cgroup"),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
}

// OnlineCPUs is the number of CPUs online on the host, whatever the
// process may use of them: /sys/devices/system/cpu/online, else the cpuN
// lines of /proc/stat, else what Go sees.
func OnlineCPUs() int {
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if n, ok := parseCPUList(strings.TrimSpace(string(b))); ok && n > 0 {
			return n
		}
	}
	if f, err := os.Open("/proc/stat"); err == nil {
		defer f.Close()
		if t, err := parseStat(f); err == nil && t.cpus > 0 {
			return t.cpus
		}
	}
	return runtime.NumCPU()
}

// parseCPUList counts the CPUs of a kernel CPU list ("0-3,8,10-11").
func parseCPUList(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, false
			}
		}
		if b-a >= 1<<16 {
			return 0, false
		}
		n += b - a + 1
	}
	return n, true
}

// cgroupQuota is the smallest CPU quota, in cores, of the process's cgroup
// and its parents (cgroup v2's cpu.max, v1's cpu.cfs_quota_us over
// cpu.cfs_period_us); 0 when none is set or the files cannot be read.
func cgroupQuota(selfCgroup, root string) float64 {
	f, err := os.Open(selfCgroup)
	if err != nil {
		return 0
	}
	defer f.Close()
	quota := math.Inf(1)
	for _, c := range parseSelfCgroup(f) {
		for dir := c.path; ; dir = filepath.Dir(dir) {
			if c.v2 {
				if b, err := os.ReadFile(filepath.Join(root, dir, "cpu.max")); err == nil {
					if q, ok := parseCPUMax(string(b)); ok {
						quota = math.Min(quota, q)
					}
				}
			} else {
				base := filepath.Join(root, c.controllers, dir)
				q, errQ := os.ReadFile(filepath.Join(base, "cpu.cfs_quota_us"))
				p, errP := os.ReadFile(filepath.Join(base, "cpu.cfs_period_us"))
				if errQ == nil && errP == nil {
					if v, ok := parseCPUMax(strings.TrimSpace(string(q)) + " " + strings.TrimSpace(string(p))); ok {
						quota = math.Min(quota, v)
					}
				}
			}
			if dir == "/" || dir == "." {
				break
			}
		}
	}
	if math.IsInf(quota, 1) {
		return 0
	}
	return quota
}

// selfCgroup is one line of /proc/self/cgroup that can hold a CPU quota.
type selfCgroup struct {
	v2          bool
	controllers string // v1: the hierarchy's directory name, e.g. "cpu,cpuacct"
	path        string
}

// parseSelfCgroup reads /proc/self/cgroup: the v2 line ("0::/path") and
// the v1 line of the cpu controller.
func parseSelfCgroup(r io.Reader) []selfCgroup {
	var out []selfCgroup
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), ":", 3)
		if len(fields) != 3 || !strings.HasPrefix(fields[2], "/") {
			continue
		}
		path := filepath.Clean(fields[2])
		switch {
		case fields[0] == "0" && fields[1] == "":
			out = append(out, selfCgroup{v2: true, path: path})
		case strings.Contains(","+fields[1]+",", ",cpu,"):
			out = append(out, selfCgroup{controllers: fields[1], path: path})
		}
	}
	return out
}

// parseCPUMax reads cgroup v2's cpu.max ("150000 100000", or "max 100000"
// for none) as cores; ok is false without a quota.
func parseCPUMax(s string) (float64, bool) {
	f := strings.Fields(s)
	if len(f) == 0 || f[0] == "max" || f[0] == "-1" {
		return 0, false
	}
	quota, err := strconv.ParseFloat(f[0], 64)
	if err != nil || quota <= 0 || math.IsInf(quota, 0) || math.IsNaN(quota) {
		return 0, false
	}
	period := 100000.0
	if len(f) > 1 {
		if period, err = strconv.ParseFloat(f[1], 64); err != nil || period <= 0 || math.IsInf(period, 0) || math.IsNaN(period) {
			return 0, false
		}
	}
	if q := quota / period; q > 0 && !math.IsInf(q, 0) {
		return q, true
	}
	return 0, false
}
