// Package host samples the machine firedrill runs on: CPU, memory and the
// disk under the database's data directory (source "host", from /proc), and
// the firedrill process itself (source "firedrill"), so that a run can tell
// a saturated host or a saturated load generator from a slow database.
package host

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

// New returns the host's samplers: "host" and "firedrill". dataDir is the
// database's data directory, whose disk "host" samples; "" (a remote
// target) skips the disk, with a note.
func New(dataDir string) []sampler.Sampler {
	return []sampler.Sampler{newHost(dataDir, "/proc", "/sys"), newSelf()}
}

// sectorBytes is the unit of /proc/diskstats' sector counts, whatever the
// device's real sector size.
const sectorBytes = 512

// machine samples /proc/stat, /proc/meminfo and /proc/diskstats.
//
// Source "host". Values:
//
//	cpus                    count     CPUs the kernel shows
//	cpu.user                %         user time (nice included) of all CPUs over the interval: 100 = every CPU busy
//	cpu.system              %         kernel time, interrupts included
//	cpu.iowait              %         idle with I/O outstanding
//	cpu.idle                %         idle
//	cpu.steal               %         taken by the hypervisor for other guests
//	procs_running           count     runnable threads now
//	procs_blocked           count     threads blocked on I/O now
//	mem.total_bytes         bytes     MemTotal
//	mem.available_bytes     bytes     MemAvailable: what can be had without swapping
//	mem.dirty_bytes         bytes     Dirty: page cache waiting to be written
//	mem.writeback_bytes     bytes     Writeback: page cache being written
//	disk.read_bytes_per_s   bytes/s   read from the disk holding the data directory
//	disk.write_bytes_per_s  bytes/s   written to that disk
//	disk.reads_per_s        1/s       reads completed
//	disk.writes_per_s       1/s       writes completed
//	disk.await_ms           ms        mean time of the reads and writes completed in the interval, queueing included; omitted without I/O
//	disk.util               0..1      share of the interval with I/O in flight (for devices serving requests in parallel, 1 is not a limit)
//	disk.queue              requests  mean number of requests in flight
//
// The disk is the whole device under the data directory's file system
// (the disk of a partition; a device-mapper or md device as itself). The
// disk.* values are absent when there is no data directory or it is on a
// file system without a block device (overlay, tmpfs); Note says which.
// Detail: nil.
type machine struct {
	procRoot string
	disk     string // the device's name in /proc/diskstats; "" = none
	note     string
	counters sampler.Counters
}

var (
	_ sampler.Sampler   = (*machine)(nil)
	_ sampler.Noter     = (*machine)(nil)
	_ sampler.Momentary = (*machine)(nil)
)

// newHost builds the "host" sampler reading /proc under procRoot and
// resolving dataDir's disk under sysRoot.
func newHost(dataDir, procRoot, sysRoot string) *machine {
	m := &machine{procRoot: procRoot}
	if dataDir == "" {
		m.note = "no data directory (remote target): disk not sampled"
		return m
	}
	disk, err := diskOf(dataDir, procRoot, sysRoot)
	if err != nil {
		m.note = fmt.Sprintf("disk not sampled: %v", err)
		return m
	}
	// A device missing from diskstats would fail every tick; say so once.
	diskstats, err := os.ReadFile(filepath.Join(procRoot, "diskstats"))
	if err == nil {
		_, err = parseDiskstats(bytes.NewReader(diskstats), disk)
	}
	if err != nil {
		m.note = fmt.Sprintf("disk %s of %s not sampled: %v", disk, dataDir, err)
		return m
	}
	m.disk = disk
	return m
}

func (*machine) Name() string { return hostmetric.Host }

// EveryTick: the host's CPU and disk saturate within a moment.
func (*machine) EveryTick() bool { return true }

// Note says why the disk is not sampled, if it is not.
func (m *machine) Note() string { return m.note }

func (m *machine) Sample(context.Context) (map[string]float64, any, error) {
	values, counters, err := m.read()
	if err != nil {
		return nil, nil, fmt.Errorf("host: %w", err)
	}
	m.derive(values, m.counters.Next(time.Now(), counters))
	return values, nil, nil
}

// read reads the /proc files once: the gauges as values, the cumulative
// counters apart.
func (m *machine) read() (values, counters map[string]float64, err error) {
	values = map[string]float64{}
	counters = map[string]float64{}
	stat, err := os.ReadFile(filepath.Join(m.procRoot, "stat"))
	if err != nil {
		return nil, nil, err
	}
	cpu, err := parseStat(bytes.NewReader(stat))
	if err != nil {
		return nil, nil, fmt.Errorf("%s/stat: %w", m.procRoot, err)
	}
	for i, name := range cpuFields {
		counters["cpu."+name] = cpu.ticks[i]
	}
	values["cpus"] = float64(cpu.cpus)
	values["procs_running"] = cpu.procsRunning
	values["procs_blocked"] = cpu.procsBlocked

	meminfo, err := os.ReadFile(filepath.Join(m.procRoot, "meminfo"))
	if err != nil {
		return nil, nil, err
	}
	mem, err := parseMeminfo(bytes.NewReader(meminfo))
	if err != nil {
		return nil, nil, fmt.Errorf("%s/meminfo: %w", m.procRoot, err)
	}
	for key, field := range memFields {
		if v, ok := mem[field]; ok {
			values[key] = v
		}
	}

	if m.disk != "" {
		diskstats, err := os.ReadFile(filepath.Join(m.procRoot, "diskstats"))
		if err != nil {
			return nil, nil, err
		}
		disk, err := parseDiskstats(bytes.NewReader(diskstats), m.disk)
		if err != nil {
			return nil, nil, fmt.Errorf("%s/diskstats: %w", m.procRoot, err)
		}
		for i, name := range diskFields {
			counters["disk."+name] = disk[i]
		}
	}
	return values, counters, nil
}

// derive adds the values computed from the counters' change over iv.
func (m *machine) derive(values map[string]float64, iv sampler.Interval) {
	cpuPercents(values, iv)
	if m.disk != "" {
		diskValues(values, iv)
	}
}

// cpuFields are the columns of /proc/stat's cpu line, in order (guest time
// is already inside user and nice, so it is not read).
var cpuFields = []string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}

// cpuTimes is what /proc/stat says about all CPUs.
type cpuTimes struct {
	ticks                      []float64 // cpuFields, in clock ticks since boot
	cpus                       int
	procsRunning, procsBlocked float64
}

// parseStat reads /proc/stat.
func parseStat(r io.Reader) (cpuTimes, error) {
	var t cpuTimes
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024) // the intr line is long
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 0 {
			continue
		}
		switch {
		case fields[0] == "cpu":
			// steal came with Linux 2.6.11; older kernels leave it 0.
			if len(fields) < len(cpuFields) {
				return t, fmt.Errorf("cpu line has %d fields", len(fields)-1)
			}
			t.ticks = make([]float64, len(cpuFields))
			for i := range min(len(cpuFields), len(fields)-1) {
				v, err := strconv.ParseFloat(fields[1+i], 64)
				if err != nil {
					return t, fmt.Errorf("cpu %s: %w", cpuFields[i], err)
				}
				t.ticks[i] = v
			}
		case strings.HasPrefix(fields[0], "cpu"):
			t.cpus++
		case fields[0] == "procs_running" && len(fields) == 2:
			t.procsRunning, _ = strconv.ParseFloat(fields[1], 64)
		case fields[0] == "procs_blocked" && len(fields) == 2:
			t.procsBlocked, _ = strconv.ParseFloat(fields[1], 64)
		}
	}
	if err := scanner.Err(); err != nil {
		return t, err
	}
	if t.ticks == nil {
		return t, errors.New("no cpu line")
	}
	return t, nil
}

// cpuPercents adds the cpu.* shares of the interval.
func cpuPercents(values map[string]float64, iv sampler.Interval) {
	deltas := map[string]float64{}
	var total float64
	for _, name := range cpuFields {
		d, ok := iv.Delta("cpu." + name)
		if !ok {
			return
		}
		deltas[name] = d
		total += d
	}
	if total <= 0 {
		return
	}
	percent := func(names ...string) float64 {
		var sum float64
		for _, name := range names {
			sum += deltas[name]
		}
		return 100 * sum / total
	}
	values["cpu.user"] = percent("user", "nice")
	values["cpu.system"] = percent("system", "irq", "softirq")
	values["cpu.iowait"] = percent("iowait")
	values["cpu.idle"] = percent("idle")
	values["cpu.steal"] = percent("steal")
}

// memFields maps value keys to /proc/meminfo fields.
var memFields = map[string]string{
	"mem.total_bytes":     "MemTotal",
	"mem.available_bytes": "MemAvailable",
	"mem.dirty_bytes":     "Dirty",
	"mem.writeback_bytes": "Writeback",
}

// parseMeminfo reads /proc/meminfo into field → bytes.
func parseMeminfo(r io.Reader) (map[string]float64, error) {
	mem := map[string]float64{}
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		name, rest, ok := strings.Cut(scanner.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		mem[name] = v
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if _, ok := mem["MemTotal"]; !ok {
		return nil, errors.New("no MemTotal")
	}
	return mem, nil
}

// diskFields are the /proc/diskstats columns read, in order, after major,
// minor and name.
var diskFields = []string{
	"reads", "reads_merged", "sectors_read", "read_ms",
	"writes", "writes_merged", "sectors_written", "write_ms",
	"in_flight", "io_ms", "weighted_io_ms",
}

// parseDiskstats reads the counters of one device from /proc/diskstats,
// in diskFields order.
func parseDiskstats(r io.Reader, device string) ([]float64, error) {
	scanner := bufio.NewScanner(r)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 3 || fields[2] != device {
			continue
		}
		if len(fields) < 3+len(diskFields) {
			return nil, fmt.Errorf("%s has %d fields, want at least %d", device, len(fields), 3+len(diskFields))
		}
		counters := make([]float64, len(diskFields))
		for i := range diskFields {
			v, err := strconv.ParseFloat(fields[3+i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", device, diskFields[i], err)
			}
			counters[i] = v
		}
		return counters, nil
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no device %s", device)
}

// diskValues adds the disk.* values of the interval.
func diskValues(values map[string]float64, iv sampler.Interval) {
	rate := func(key, field string, scale float64) {
		if v, ok := iv.Rate("disk." + field); ok {
			values[key] = v * scale
		}
	}
	rate("disk.read_bytes_per_s", "sectors_read", sectorBytes)
	rate("disk.write_bytes_per_s", "sectors_written", sectorBytes)
	rate("disk.reads_per_s", "reads", 1)
	rate("disk.writes_per_s", "writes", 1)
	if iv.Seconds <= 0 {
		return
	}
	intervalMS := iv.Seconds * 1000
	if busy, ok := iv.Delta("disk.io_ms"); ok {
		values["disk.util"] = min(busy/intervalMS, 1)
	}
	if weighted, ok := iv.Delta("disk.weighted_io_ms"); ok {
		values["disk.queue"] = weighted / intervalMS
	}
	reads, ok1 := iv.Delta("disk.reads")
	writes, ok2 := iv.Delta("disk.writes")
	readMS, ok3 := iv.Delta("disk.read_ms")
	writeMS, ok4 := iv.Delta("disk.write_ms")
	if ok1 && ok2 && ok3 && ok4 && reads+writes > 0 {
		values["disk.await_ms"] = (readMS + writeMS) / (reads + writes)
	}
}
