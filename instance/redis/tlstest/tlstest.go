// Package tlstest starts a throwaway Redis that speaks TLS on a port of
// its own, with a certificate authority, a server certificate and a
// client certificate made for it, so that tests of firedrill's rediss://
// sessions run against a real server.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/firedrill/firedrill/instance/redis"
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
	files, err := writeCerts(dir)
	if err != nil {
		tb.Fatalf("certificates: %v", err)
	}
	s.CA, s.ClientCert, s.ClientKey, s.OtherCA = files["ca.crt"], files["client.crt"], files["client.key"], files["other-ca.crt"]
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
			"tls-cert-file":    files["server.crt"],
			"tls-key-file":     files["server.key"],
			"tls-ca-cert-file": files["ca.crt"],
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

// writeCerts makes a CA, a server certificate for 127.0.0.1 and
// localhost, a client certificate, and an unrelated CA, as PEM files in
// dir, valid for a day.
func writeCerts(dir string) (map[string]string, error) {
	files := map[string]string{}
	write := func(name, kind string, der []byte) error {
		path := filepath.Join(dir, name)
		files[name] = path
		return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o644)
	}
	now := time.Now()
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "firedrill test " + name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := write(name+".crt", "CERTIFICATE", der); err != nil {
			return nil, nil, err
		}
		cert, err := x509.ParseCertificate(der)
		return cert, key, err
	}
	ca, caKey, err := newCA("ca")
	if err != nil {
		return nil, err
	}
	if _, _, err := newCA("other-ca"); err != nil {
		return nil, err
	}
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage, dns []string, ips []net.IP) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "firedrill test " + name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: dns, IPAddresses: ips,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return err
		}
		if err := write(name+".crt", "CERTIFICATE", der); err != nil {
			return err
		}
		return write(name+".key", "PRIVATE KEY", keyDER)
	}
	if err := leaf("server", 2, x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}); err != nil {
		return nil, err
	}
	if err := leaf("client", 3, x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return nil, err
	}
	return files, nil
}
