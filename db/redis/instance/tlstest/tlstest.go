// Package tlstest starts a throwaway Redis that speaks TLS on a port of
// its own, with a certificate authority, a server certificate and a
// client certificate made for it by internal/testcert, so that tests of firedrill's rediss://
// sessions run against a real server.
package tlstest

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"

	redis "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/internal/testcert"
)

// Server is a running Redis with TLS on TLSAddr and plain RESP on the
// instance's own port and socket.
type Server struct {
	Inst    *redis.Instance
	TLSAddr string // 127.0.0.1:port of the TLS listener
	// CA is the authority's certificate (what a client passes as
	// cacert=); ClientCert and ClientKey a client certificate it signed.
	CA, ClientCert, ClientKey string
	// OtherCA signs nothing the server knows: a client trusting only it
	// cannot verify the server.
	OtherCA string
}

// Options configure the server.
type Options struct {
	// RequireClientCert is the server's tls-auth-clients (yes is Redis's
	// default).
	RequireClientCert bool
	// Password, when set, is required of every client (requirepass).
	Password string
}

// Start starts the server. It skips the test when redis-server is not
// installed, and stops the server and removes its files when the test
// ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Skip("redis-server not installed (scripts/setup.sh installs it)")
	}
	// The server may run as another user (firedrill drops root): its
	// files must be readable by it. They are a test's throwaway keys.
	dir, err := os.MkdirTemp("", "firedrill-redis-tls-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	s := &Server{}
	files, err := testcert.Write(dir)
	if err != nil {
		tb.Fatalf("certificates: %v", err)
	}
	s.CA, s.ClientCert, s.ClientKey, s.OtherCA = files.CA, files.ClientCert, files.ClientKey, files.OtherCA
	auth := "no"
	if opts.RequireClientCert {
		auth = "yes"
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		inst, err := redis.Start(tb.Context(), redis.Options{Password: opts.Password, Settings: map[string]string{
			"tls-port":         strconv.Itoa(port),
			"tls-cert-file":    files.Cert,
			"tls-key-file":     files.Key,
			"tls-ca-cert-file": files.CA,
			"tls-auth-clients": auth,
		}})
		if err != nil {
			lastErr = err // the port was taken in between: another one
			continue
		}
		tb.Cleanup(func() {
			if err := inst.Stop(); err != nil {
				tb.Errorf("stop redis-server: %v", err)
			}
		})
		s.Inst, s.TLSAddr = inst, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		return s
	}
	tb.Fatalf("start redis-server with TLS: %v", lastErr)
	return nil
}

// URL is a rediss:// URL of the TLS port with the given query (without
// its '?'; "" for none).
func (s *Server) URL(query string) string {
	u := "rediss://" + s.TLSAddr + "/0"
	if query != "" {
		u += "?" + query
	}
	return u
}

// Trusted is the query of a client that trusts the server's authority
// and shows its client certificate.
func (s *Server) Trusted() string {
	return "cacert=" + s.CA + "&cert=" + s.ClientCert + "&key=" + s.ClientKey
}

// freePort is a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
