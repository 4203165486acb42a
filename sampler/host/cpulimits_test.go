package host

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"0-1", 2, true},         // a 2-core host
		{"0", 1, true},           // one CPU
		{"0-3,8,10-11", 7, true}, // holes: CPUs taken offline
		{"", 0, false},
		{"3-1", 0, false}, // a range backwards
		{"a-b", 0, false},
	}
	for _, tt := range tests {
		if got, ok := parseCPUList(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("parseCPUList(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"max 100000\n", 0, false},     // no quota
		{"150000 100000\n", 1.5, true}, // a pod limited to 1.5 cores
		{"50000 100000", 0.5, true},
		{"-1 100000", 0, false}, // v1's "none"
		{"100000 0", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		if got, ok := parseCPUMax(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("parseCPUMax(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// The quota is the smallest of the process's cgroup and its parents'.
func TestCgroupQuota(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "cgroup"), "0::/kubepods/pod1/ctr\n")
	write(filepath.Join(root, "fs", "kubepods", "pod1", "ctr", "cpu.max"), "max 100000\n")
	write(filepath.Join(root, "fs", "kubepods", "pod1", "cpu.max"), "150000 100000\n")
	write(filepath.Join(root, "fs", "kubepods", "cpu.max"), "400000 100000\n")
	if got := cgroupQuota(filepath.Join(root, "cgroup"), filepath.Join(root, "fs")); got != 1.5 {
		t.Errorf("v2 quota %v, want the pod's 1.5", got)
	}
	write(filepath.Join(root, "cgroup1"), "4:memory:/x\n2:cpu,cpuacct:/job\n")
	write(filepath.Join(root, "fs1", "cpu,cpuacct", "job", "cpu.cfs_quota_us"), "200000\n")
	write(filepath.Join(root, "fs1", "cpu,cpuacct", "job", "cpu.cfs_period_us"), "100000\n")
	write(filepath.Join(root, "fs1", "cpu,cpuacct", "cpu.cfs_quota_us"), "-1\n")
	write(filepath.Join(root, "fs1", "cpu,cpuacct", "cpu.cfs_period_us"), "100000\n")
	if got := cgroupQuota(filepath.Join(root, "cgroup1"), filepath.Join(root, "fs1")); got != 2 {
		t.Errorf("v1 quota %v, want 2", got)
	}
	if got := cgroupQuota(filepath.Join(root, "missing"), root); got != 0 {
		t.Errorf("no cgroup file: quota %v, want 0", got)
	}
}

// On this machine: the host's CPUs are the kernel's online ones, and the
// process may use at most those.
func TestReadCPULimits(t *testing.T) {
	t.Parallel()
	l := ReadCPULimits()
	if l.Online < 1 || l.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Fatalf("limits %+v", l)
	}
	if runtime.GOOS == "linux" && (l.Affinity < 1 || l.Affinity > l.Online) {
		t.Errorf("affinity %d of %d online CPUs", l.Affinity, l.Online)
	}
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-1", "0-3,8,10-11", "", "3-1", "0-99999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := parseCPUList(s); ok && (n < 1 || n > len(s)<<16) {
			t.Errorf("parseCPUList(%q) = %d", s, n)
		}
	})
}

func FuzzParseCPUMax(f *testing.F) {
	for _, s := range []string{"max 100000", "150000 100000", "-1", "1e308 1e-308", "NaN 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if q, ok := parseCPUMax(s); ok && (!(q > 0) || math.IsInf(q, 0)) {
			t.Errorf("parseCPUMax(%q) = %v", s, q)
		}
	})
}
