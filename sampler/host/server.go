package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

// server samples the CPU of a database server's processes on this
// machine: the process whose id pid returns and its descendants (a
// PostgreSQL postmaster's backends, a mariadbd's threads), so that a run
// can tell the server's CPU from firedrill's and the rest of the host's.
// A kind adds it when it knows the server's process (an embedded one).
//
// Source "server". Values:
//
//	cpu        cores  CPU time (user + system) of the server's processes per second of the interval, the time of exited children included: 1 = one core busy
//	processes  count  the server's processes now (its main one and its descendants)
//
// Detail: nil.
type server struct {
	proc     string
	pid      func() int
	counters sampler.Counters
	lastPID  int
}

var _ sampler.Sampler = (*server)(nil)

// Server is the "server" sampler of the process pid returns (read at
// each sample: a restarted server has a new one; 0 when it is down).
func Server(pid func() int) sampler.Sampler { return &server{proc: "/proc", pid: pid} }

func (*server) Name() string { return hostmetric.Server }

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat's
// times: 100 on every Linux architecture Go supports.
const clockTicks = 100

func (s *server) Sample(context.Context) (map[string]float64, any, error) {
	pid := s.pid()
	if pid <= 0 {
		return nil, nil, errors.New("server: no server process")
	}
	if pid != s.lastPID { // a new server: its counters start over
		s.counters = sampler.Counters{}
		s.lastPID = pid
	}
	procs, err := readProcs(s.proc)
	if err != nil {
		return nil, nil, err
	}
	root, ok := procs[pid]
	if !ok {
		return nil, nil, fmt.Errorf("server: process %d is gone", pid)
	}
	children := map[int][]int{}
	for p, st := range procs {
		children[st.ppid] = append(children[st.ppid], p)
	}
	// The root's own time and its waited-for children's, and the live
	// descendants' own: a backend that exits moves its time from the
	// second sum into the first.
	ticks := root.utime + root.stime + root.cutime + root.cstime
	n := 1
	queue := children[pid]
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		st := procs[p]
		ticks += st.utime + st.stime
		n++
		queue = append(queue, children[p]...)
	}
	values := map[string]float64{hostmetric.ServerProcesses: float64(n)}
	iv := s.counters.Next(time.Now(), map[string]float64{"cpu_s": ticks / clockTicks})
	if cpu, ok := iv.Rate("cpu_s"); ok && cpu >= 0 {
		values[hostmetric.ServerCPU] = cpu
	}
	return values, nil, nil
}

// procStat is what the server sampler reads of /proc/<pid>/stat.
type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime float64 // clock ticks
}

// readProcs reads every process's stat under proc.
func readProcs(proc string) (map[int]procStat, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	out := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue // exited since the listing
		}
		if st, ok := parseProcStat(b); ok {
			out[pid] = st
		}
	}
	return out, nil
}

// parseProcStat reads /proc/<pid>/stat: "pid (comm) state ppid …", comm
// may hold spaces and parentheses, so the fields start after the last
// ')'. utime, stime, cutime and cstime are fields 14 to 17.
func parseProcStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 15 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return procStat{}, false
	}
	var t [4]float64
	for k := range t {
		v, err := strconv.ParseFloat(string(f[11+k]), 64)
		if err != nil || v < 0 {
			return procStat{}, false
		}
		t[k] = v
	}
	return procStat{ppid: ppid, utime: t[0], stime: t[1], cutime: t[2], cstime: t[3]}, true
}
