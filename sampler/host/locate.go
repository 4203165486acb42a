package host

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What a kind uses to find a given server's process on this machine, so
// that the server sampler can measure its CPU apart from firedrill's:
// whether the server is here at all (Local), a process's parent
// (Parent, PostgreSQL's postmaster above its backend), and the process
// listening on a port (Listener, a MariaDB's); each found process is
// checked to be the server's program (Check), as a port forwarded from a
// container is a proxy's, and a process id from another PID namespace
// another program's or none.

// RemoteNote is what a kind notes for the server sampler's source when
// the given server is on another machine: its CPU is not measurable
// from here, and firedrill does not guess it.
const RemoteNote = "server CPU unknown (remote server)"

// Local says whether a server's host, as its connection string names
// it, is this machine: a unix socket (a path, or "" where the driver
// then uses its default socket), localhost, or a loopback address.
func Local(host string) bool {
	if host == "" || strings.HasPrefix(host, "/") || strings.HasPrefix(host, "@") {
		return true
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Parent is the parent of process pid.
func Parent(pid int) (int, error) {
	st, err := readStat("/proc", pid)
	if err != nil {
		return 0, err
	}
	return st.ppid, nil
}

// Check says whether process pid runs here as one of programs (its
// /proc/<pid>/comm), and if not, why not.
func Check(pid int, programs ...string) error {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return fmt.Errorf("process %d is not visible on this host (in another PID namespace, a container?)", pid)
	}
	comm := strings.TrimSpace(string(b))
	if !slices.Contains(programs, comm) {
		return fmt.Errorf("process %d is %s, not the server (%s): a proxy or another PID namespace's", pid, comm, strings.Join(programs, " or "))
	}
	return nil
}

// readStat reads one process's stat under proc.
func readStat(proc string, pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, fmt.Errorf("process %d is not visible on this host: %w", pid, err)
	}
	st, ok := parseProcStat(b)
	if !ok {
		return procStat{}, fmt.Errorf("process %d: unreadable stat %q", pid, b)
	}
	return st, nil
}

// Listener is the process listening on TCP port (on any local address,
// IPv4 or IPv6) or, when socket is a path, on that unix socket: the
// socket's inode from /proc/net, then the process holding it among the
// descriptors this user may read (every process's, as root).
func Listener(port int, socket string) (int, error) {
	var inodes []uint64
	if socket != "" {
		inodes = append(inodes, unixInodes("/proc/net/unix", socket)...)
	} else {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			inodes = append(inodes, tcpListenInodes(f, port)...)
		}
	}
	if len(inodes) == 0 {
		where := ":" + strconv.Itoa(port)
		if socket != "" {
			where = socket
		}
		return 0, fmt.Errorf("no socket listening on %s is visible on this host", where)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	want := map[string]bool{}
	for _, ino := range inodes {
		want["socket:["+strconv.FormatUint(ino, 10)+"]"] = true
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", e.Name(), "fd"))
		if err != nil {
			continue // another user's, or gone
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join("/proc", e.Name(), "fd", fd.Name())); err == nil && want[link] {
				return pid, nil
			}
		}
	}
	return 0, errors.New("the process listening there is not one this user can see")
}

// tcpListenInodes are the inodes of the sockets listening on port in a
// /proc/net/tcp-style file.
func tcpListenInodes(path string, port int) []uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if p, listen, inode, ok := parseTCPLine(sc.Text()); ok && listen && p == port && inode != 0 {
			out = append(out, inode)
		}
	}
	return out
}

// parseTCPLine reads one line of /proc/net/tcp or tcp6: "sl
// local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt
// uid timeout inode …", the local address as hex "ADDR:PORT", the
// state 0A when listening.
func parseTCPLine(line string) (port int, listen bool, inode uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return 0, false, 0, false
	}
	i := strings.LastIndexByte(f[1], ':')
	if i < 0 {
		return 0, false, 0, false
	}
	p, err := strconv.ParseUint(f[1][i+1:], 16, 16)
	if err != nil {
		return 0, false, 0, false
	}
	inode, err = strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return 0, false, 0, false
	}
	return int(p), f[3] == "0A", inode, true
}

// unixInodes are the inodes of the unix sockets bound to path in a
// /proc/net/unix-style file ("Num RefCount Protocol Flags Type St Inode
// Path").
func unixInodes(file, path string) []uint64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[7] != path {
			continue
		}
		if inode, err := strconv.ParseUint(f[6], 10, 64); err == nil && inode != 0 {
			out = append(out, inode)
		}
	}
	return out
}
