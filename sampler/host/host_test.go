package host

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/sampler"
)

// TestMachineOnFixedProc reads two fixed /proc snapshots one second apart
// and checks every derived value against the arithmetic done by hand.
func TestMachineOnFixedProc(t *testing.T) {
	t.Parallel()
	m := &machine{procRoot: filepath.Join("testdata", "proc1"), disk: "sda"}
	var counters sampler.Counters
	start := time.Unix(1700000000, 0)
	values, reading, err := m.read()
	if err != nil {
		t.Fatal(err)
	}
	m.derive(values, counters.Next(start, reading))
	if _, ok := values["cpu.user"]; ok {
		t.Errorf("first reading has cpu.user = %v, want no rates yet", values["cpu.user"])
	}

	m.procRoot = filepath.Join("testdata", "proc2")
	values, reading, err = m.read()
	if err != nil {
		t.Fatal(err)
	}
	m.derive(values, counters.Next(start.Add(time.Second), reading))
	// CPU ticks grew by user 300, nice 0, system 100, idle 400, iowait 50,
	// irq 0, softirq 10, steal 40: 900 in all.
	// sda grew by 100 reads, 400 writes, 8000 and 32000 sectors, 300 and
	// 1000 ms reading and writing, 500 ms busy, 1000 ms weighted.
	want := map[string]float64{
		"cpus": 2, "procs_running": 5, "procs_blocked": 0,
		"cpu.user": 100 * 300.0 / 900, "cpu.system": 100 * 110.0 / 900, "cpu.iowait": 100 * 50.0 / 900,
		"cpu.idle": 100 * 400.0 / 900, "cpu.steal": 100 * 40.0 / 900,
		"mem.total_bytes": 16384000 * 1024, "mem.available_bytes": 8192000 * 1024,
		"mem.dirty_bytes": 2048 * 1024, "mem.writeback_bytes": 16 * 1024,
		"disk.reads_per_s": 100, "disk.writes_per_s": 400,
		"disk.read_bytes_per_s": 8000 * 512, "disk.write_bytes_per_s": 32000 * 512,
		"disk.await_ms": 1300.0 / 500, "disk.util": 0.5, "disk.queue": 1,
	}
	for key, w := range want {
		if got, ok := values[key]; !ok || math.Abs(got-w) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, w)
		}
	}
	for key := range values {
		if _, ok := want[key]; !ok {
			t.Errorf("unexpected value %s = %v", key, values[key])
		}
	}
}

// TestParsersReject checks that broken /proc text is an error, not zeros.
func TestParsersReject(t *testing.T) {
	t.Parallel()
	if _, err := parseStat(strings.NewReader("intr 1 2 3\n")); err == nil {
		t.Error("parseStat accepted text without a cpu line")
	}
	if _, err := parseStat(strings.NewReader("cpu 1 2 x 4 5 6 7 8\n")); err == nil {
		t.Error("parseStat accepted a non-number")
	}
	if _, err := parseMeminfo(strings.NewReader("MemFree: 1 kB\n")); err == nil {
		t.Error("parseMeminfo accepted text without MemTotal")
	}
	if _, err := parseDiskstats(strings.NewReader("8 0 sda 1 2 3\n"), "sda"); err == nil {
		t.Error("parseDiskstats accepted a short line")
	}
	if _, err := parseDiskstats(strings.NewReader("8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n"), "sdb"); err == nil {
		t.Error("parseDiskstats found a device that is not there")
	}
}

// TestFindMount looks devices up in a mount table with an overlay root, a
// tmpfs, a btrfs subvolume and a plain partition.
func TestFindMount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		major, minor   uint32
		fsType, source string
		found          bool
	}{
		{0, 305, "overlay", "overlay", true},
		{0, 310, "tmpfs", "shm", true},
		{0, 44, "btrfs", "/dev/nvme0n1p2", true}, // anonymous device, real source
		{8, 1, "ext4", "/dev/sda1", true},
		{0, 999, "", "", false},
	} {
		file, err := os.Open(filepath.Join("testdata", "mountinfo"))
		if err != nil {
			t.Fatal(err)
		}
		fsType, source, found := findMount(file, c.major, c.minor)
		file.Close()
		if fsType != c.fsType || source != c.source || found != c.found {
			t.Errorf("%d:%d: %q %q %v, want %q %q %v", c.major, c.minor, fsType, source, found, c.fsType, c.source, c.found)
		}
	}
}

// TestDiskName resolves device numbers through a fake sysfs: a partition
// to its disk, a whole disk and a device-mapper device to themselves.
func TestDiskName(t *testing.T) {
	t.Parallel()
	sys := t.TempDir()
	mkdir := func(path string) {
		if err := os.MkdirAll(filepath.Join(sys, path), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(number, target string) {
		mkdir("dev/block")
		if err := os.Symlink(filepath.Join("..", "..", target), filepath.Join(sys, "dev", "block", number)); err != nil {
			t.Fatal(err)
		}
	}
	mkdir("devices/pci0000:00/ata1/block/sda/sda1")
	if err := os.WriteFile(filepath.Join(sys, "devices/pci0000:00/ata1/block/sda/sda1/partition"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkdir("devices/virtual/block/dm-0")
	link("8:0", "devices/pci0000:00/ata1/block/sda")
	link("8:1", "devices/pci0000:00/ata1/block/sda/sda1")
	link("253:0", "devices/virtual/block/dm-0")
	for _, c := range []struct {
		major, minor uint32
		want         string
	}{
		{8, 0, "sda"},
		{8, 1, "sda"}, // a partition: its disk
		{253, 0, "dm-0"},
	} {
		got, err := diskName(sys, c.major, c.minor)
		if err != nil || got != c.want {
			t.Errorf("diskName(%d:%d) = %q, %v; want %q", c.major, c.minor, got, err, c.want)
		}
	}
	if _, err := diskName(sys, 9, 9); err == nil {
		t.Error("diskName found a device that is not there")
	}
}

// TestHostLive reads the real /proc twice. The disk under a temp dir is
// either sampled or explained by a note (overlay and tmpfs have none).
func TestHostLive(t *testing.T) {
	t.Parallel()
	m := newHost(t.TempDir(), "/proc", "/sys")
	t.Logf("disk %q, note %q", m.disk, m.Note())
	if (m.disk == "") == (m.Note() == "") {
		t.Fatalf("disk %q and note %q: want exactly one", m.disk, m.Note())
	}
	if _, _, err := m.Sample(t.Context()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	values, detail, err := m.Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if detail != nil {
		t.Errorf("detail %v, want nil", detail)
	}
	var cpuSum float64
	for _, key := range []string{"cpu.user", "cpu.system", "cpu.iowait", "cpu.idle", "cpu.steal"} {
		v, ok := values[key]
		if !ok || v < 0 || v > 100 {
			t.Errorf("%s = %v (present %v), want 0..100", key, v, ok)
		}
		cpuSum += v
	}
	if cpuSum > 100.001 {
		t.Errorf("CPU shares add up to %v%%", cpuSum)
	}
	if values["cpus"] < 1 || values["mem.total_bytes"] <= 0 || values["mem.available_bytes"] <= 0 {
		t.Errorf("values %v", values)
	}
	if m.disk != "" {
		for _, key := range []string{"disk.read_bytes_per_s", "disk.write_bytes_per_s", "disk.reads_per_s", "disk.writes_per_s", "disk.util", "disk.queue"} {
			if _, ok := values[key]; !ok {
				t.Errorf("%s missing from %v", key, values)
			}
		}
	}
}

// TestHostWithoutDataDir skips the disk of a remote target, with a note.
func TestHostWithoutDataDir(t *testing.T) {
	t.Parallel()
	samplers := New("")
	if len(samplers) != 2 || samplers[0].Name() != "host" || samplers[1].Name() != "firedrill" {
		t.Fatalf("New returned %v", samplers)
	}
	noter, ok := samplers[0].(sampler.Noter)
	if !ok || !strings.Contains(noter.Note(), "remote") {
		t.Errorf("want a note about the remote target, got %v", samplers[0])
	}
	values, _, err := samplers[0].Sample(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for key := range values {
		if strings.HasPrefix(key, "disk.") {
			t.Errorf("%s sampled without a data directory", key)
		}
	}
}

// TestHostOnMissingDir notes a data directory that does not exist.
func TestHostOnMissingDir(t *testing.T) {
	t.Parallel()
	m := newHost(filepath.Join(t.TempDir(), "absent"), "/proc", "/sys")
	if m.disk != "" || !strings.Contains(m.Note(), "absent") {
		t.Errorf("disk %q, note %q: want a note naming the directory", m.disk, m.Note())
	}
}

// TestHostOnTmpfs notes a data directory on a file system without a block
// device (/dev/shm is a tmpfs on Linux).
func TestHostOnTmpfs(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("/dev/shm", "firedrill-host-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	defer os.RemoveAll(dir)
	m := newHost(dir, "/proc", "/sys")
	if m.disk != "" || !strings.Contains(m.Note(), "tmpfs") {
		t.Errorf("disk %q, note %q: want a note about tmpfs", m.disk, m.Note())
	}
}

// The host and firedrill itself are read on every tick: a saturated CPU
// or load generator shows within a moment.
func TestHostSourcesEveryTick(t *testing.T) {
	t.Parallel()
	for _, src := range sampler.Schedule(nil, New("")) {
		if !src.EveryTick || src.Server {
			t.Errorf("%s: every tick %v, server %v; want every tick, not the server", src.Name(), src.EveryTick, src.Server)
		}
	}
}
