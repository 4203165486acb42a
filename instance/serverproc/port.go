package serverproc

import (
	"fmt"
	"net"
)

// FreePort asks the kernel for a free loopback port. Another process may
// take it before the server binds it: callers retry with another port when
// the server says its address is in use.
func FreePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	if err := listener.Close(); err != nil {
		return 0, fmt.Errorf("release probe port %d: %w", port, err)
	}
	return port, nil
}
