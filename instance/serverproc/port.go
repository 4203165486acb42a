package serverproc

import (
	"errors"
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

// OnFreePort calls launch with a free port until the server starts, fails
// for another reason than its port being taken meanwhile (ErrPortInUse),
// or has failed attempts times.
func OnFreePort(attempts int, say func(format string, args ...any), launch func(port int) error) error {
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return err
		}
		err = launch(port)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, ErrPortInUse) || attempt == attempts:
			return err
		}
		say("port %d was taken meanwhile; trying another", port)
	}
}

// maxSocketPath is the longest unix socket path the kernel accepts
// (sun_path is 108 bytes with the terminating NUL).
const maxSocketPath = 107

// CheckSocketPath refuses a server's unix socket path the kernel would
// not take, saying what to do.
func CheckSocketPath(socket string) error {
	if len(socket) > maxSocketPath {
		return fmt.Errorf("unix socket path %s is longer than %d bytes; set TMPDIR to a shorter directory such as /tmp",
			socket, maxSocketPath)
	}
	return nil
}
