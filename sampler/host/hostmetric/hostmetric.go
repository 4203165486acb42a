// Package hostmetric names what firedrill's backend-neutral samplers
// record: the machine ("host") and firedrill itself ("firedrill"). Every
// run has them, whatever database it drives, so they live apart from any
// backend's metrics package; like those, this is a leaf that the sampler
// writes with and the rules, reports and compare read with.
package hostmetric

// The backend-neutral sources.
const (
	Host = "host"      // the machine: CPU, memory, the data directory's disk
	Self = "firedrill" // the firedrill process: CPU, memory, GC, scheduling
	// Server is the database server's processes on this machine, when
	// a kind knows them (an embedded server): their CPU.
	Server = "server"
)

// Sources lists them, for checks that a name is known.
var Sources = []string{Host, Self, Server}

// Value keys of Host read outside the sampler (Keys lists all).
const (
	CPUs         = "cpus"
	CPUUser      = "cpu.user"
	CPUSystem    = "cpu.system"
	CPUIowait    = "cpu.iowait"
	CPUIdle      = "cpu.idle"
	CPUSteal     = "cpu.steal"
	DiskAwaitMS  = "disk.await_ms"
	DiskUtil     = "disk.util"
	DiskPrefix   = "disk."
	MemAvailable = "mem.available_bytes"
)

// Value keys of Self read outside the sampler.
const (
	SelfCPU      = "cpu"  // cores busy
	SelfCPUs     = "cpus" // GOMAXPROCS
	SelfOnline   = "cpus.online"
	SelfAffinity = "cpus.affinity"
	SelfQuota    = "cpus.quota"
	SelfRSSBytes = "rss_bytes"            // resident memory
	SelfSchedP99 = "sched_latency_p99_ms" // how long runnable goroutines waited for a thread (p99)
)

// Value keys of Server.
const (
	ServerCPU       = "cpu"       // cores busy, the server's processes together
	ServerProcesses = "processes" // its processes now
)

// Key is one value key of a source, with its unit and what it means.
type Key struct {
	Source, Key, Unit, Doc string
}

// Keys lists every value key of Host and Self. The samplers' conformance
// test holds it, sampler/README.md and the samplers' doc comments to the
// same list.
var Keys = []Key{
	{Server, "cpu", "cores", "CPU time (user + system) of the server's processes per second of the interval, the time of exited children included: 1 = one core busy"},
	{Server, "processes", "count", "the server's processes now (its main one and its descendants)"},
	{Host, "cpus", "count", "CPUs the kernel shows"},
	{Host, "cpu.user", "%", "user time (nice included) of all CPUs over the interval: 100 = every CPU busy"},
	{Host, "cpu.system", "%", "kernel time, interrupts included"},
	{Host, "cpu.iowait", "%", "idle with I/O outstanding"},
	{Host, "cpu.idle", "%", "idle"},
	{Host, "cpu.steal", "%", "taken by the hypervisor for other guests"},
	{Host, "procs_running", "count", "runnable threads now"},
	{Host, "procs_blocked", "count", "threads blocked on I/O now"},
	{Host, "mem.total_bytes", "bytes", "MemTotal"},
	{Host, "mem.available_bytes", "bytes", "MemAvailable: what can be had without swapping"},
	{Host, "mem.dirty_bytes", "bytes", "Dirty: page cache waiting to be written"},
	{Host, "mem.writeback_bytes", "bytes", "Writeback: page cache being written"},
	{Host, "disk.read_bytes_per_s", "bytes/s", "read from the disk holding the data directory"},
	{Host, "disk.write_bytes_per_s", "bytes/s", "written to that disk"},
	{Host, "disk.reads_per_s", "1/s", "reads completed"},
	{Host, "disk.writes_per_s", "1/s", "writes completed"},
	{Host, "disk.await_ms", "ms", "mean time of the reads and writes completed in the interval, queueing included; omitted without I/O"},
	{Host, "disk.util", "0..1", "share of the interval with I/O in flight (for devices serving requests in parallel, 1 is not a limit)"},
	{Host, "disk.queue", "requests", "mean number of requests in flight"},
	{Self, "cpu", "cores", "CPU time (user + system) per second of the interval: 1 = one core busy"},
	{Self, "cpus", "count", "GOMAXPROCS: the cores the Go scheduler uses"},
	{Self, "cpus.online", "count", "CPUs online on the host"},
	{Self, "cpus.affinity", "count", "CPUs in firedrill's affinity mask (sched_getaffinity); omitted when unknown"},
	{Self, "cpus.quota", "cores", "its cgroup's CPU quota (cpu.max); omitted when none is set"},
	{Self, "rss_bytes", "bytes", "resident memory (Linux)"},
	{Self, "heap_bytes", "bytes", "heap memory occupied by objects, live or not yet swept"},
	{Self, "goroutines", "count", "goroutines now"},
	{Self, "gc_count", "count", "garbage collections completed in the interval"},
	{Self, "gc_pause_ms", "ms", "stop-the-world pause time in the interval (from the runtime's pause histogram: bucket midpoints)"},
	{Self, "sched_latency_p99_ms", "ms", "99th percentile of the time runnable goroutines waited for a thread, in the interval; omitted when none waited"},
	{Self, "sched_latency_max_ms", "ms", "the longest such wait in the interval (upper bound of its histogram bucket)"},
}

// Unit is the unit of source's key; "" when the key is unknown.
func Unit(source, key string) string {
	for _, k := range Keys {
		if k.Source == source && k.Key == key {
			return k.Unit
		}
	}
	return ""
}
