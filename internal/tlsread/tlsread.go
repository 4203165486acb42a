// Package tlsread is the read of the load targets' encrypted sessions
// (db/mariadb/client, db/redis/client): one read through crypto/tls, its
// outcome sorted into the errors their sessions report.
package tlsread

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
)

// Read reads into b through tc. It answers a read that brought bytes
// with a nil error (an error that came with them comes again on the next
// read), the server's end of the session with closed (the caller's own
// error for it), and anything else with "read: ..." wrapping the cause.
func Read(tc *tls.Conn, b []byte, closed error) (int, error) {
	n, err := tc.Read(b)
	switch {
	case n > 0:
		return n, nil
	case err == nil:
		return 0, errors.New("read: no data")
	case errors.Is(err, io.EOF):
		return 0, closed
	}
	return 0, fmt.Errorf("read: %w", err)
}
