package host

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocal: a unix socket, localhost and loopback addresses are this
// machine; any other name or address is a remote server.
func TestLocal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		host string
		want bool
	}{
		{"", true},                    // the driver's default socket
		{"/var/run/postgresql", true}, // a socket's directory
		{"@abstract", true},
		{"localhost", true},
		{"LOCALHOST", true},
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"::1", true},
		{"[::1]", true},
		{"10.0.0.5", false},
		{"db.example.com", false},
		{"localhost.example.com", false},
		{"2001:db8::1", false},
	} {
		if got := Local(c.host); got != c.want {
			t.Errorf("Local(%q) = %v, want %v", c.host, got, c.want)
		}
	}
}

// TestParseTCPLine: the port, state and inode of /proc/net/tcp lines,
// IPv4 and IPv6; the header and short lines are refused.
func TestParseTCPLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line   string
		port   int
		listen bool
		inode  uint64
		ok     bool
	}{
		{"   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 123456 1 0000000000000000 100 0 0 10 0", 5432, true, 123456, true},
		{"   1: 0100007F:1538 0100007F:D3A2 01 00000000:00000000 00:00000000 00000000   999        0 654321 1 0000000000000000 20 4 30 10 -1", 5432, false, 654321, true},
		{"   0: 00000000000000000000000001000000:0CEA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   0        0 777 1 0000000000000000 100 0 0 10 0", 3306, true, 777, true},
		{"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode", 0, false, 0, false},
		{"0: 0100007F 00000000:0000 0A", 0, false, 0, false},
	} {
		port, listen, inode, ok := parseTCPLine(c.line)
		if port != c.port || listen != c.listen || inode != c.inode || ok != c.ok {
			t.Errorf("parseTCPLine(%q) = %d %v %d %v, want %d %v %d %v", c.line, port, listen, inode, ok, c.port, c.listen, c.inode, c.ok)
		}
	}
}

func FuzzParseTCPLine(f *testing.F) {
	f.Add("   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 123456 1 0000000000000000 100 0 0 10 0")
	f.Add("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode")
	f.Fuzz(func(t *testing.T, line string) {
		port, _, _, ok := parseTCPLine(line)
		if ok && (port < 0 || port > 65535) {
			t.Errorf("port %d out of range from %q", port, line)
		}
		if !ok && port != 0 {
			t.Errorf("refused line %q gave port %d", line, port)
		}
	})
}

// TestListenerFindsThisProcess: the process listening on a TCP port or a
// unix socket is found, and Check tells it from another program.
func TestListenerFindsThisProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if pid, err := Listener(port, ""); err != nil || pid != os.Getpid() {
		t.Errorf("Listener(%d) = %d, %v; want this process %d", port, pid, err, os.Getpid())
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uln.Close()
	if pid, err := Listener(0, sock); err != nil || pid != os.Getpid() {
		t.Errorf("Listener(%s) = %d, %v; want this process %d", sock, pid, err, os.Getpid())
	}
	if _, err := Listener(0, sock+".none"); err == nil {
		t.Errorf("Listener of a socket nobody listens on found a process")
	}
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(os.Getpid(), strings.TrimSpace(string(comm))); err != nil {
		t.Errorf("Check(self): %v", err)
	}
	if err := Check(os.Getpid(), "postgres"); err == nil || !strings.Contains(err.Error(), "not the server") {
		t.Errorf("Check(self, postgres) = %v, want it refused as another program", err)
	}
	if ppid, err := Parent(os.Getpid()); err != nil || ppid != os.Getppid() {
		t.Errorf("Parent(self) = %d, %v; want %d", ppid, err, os.Getppid())
	}
}
