package redisconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// TLS says how a rediss:// session checks the server and shows itself to
// it. The URL's parameters are named after redis-cli's flags (--cacert,
// --cert, --key, --insecure), so that a command line that works with
// redis-cli translates word for word.
type TLS struct {
	// CACert is a PEM file of the authorities that sign the server's
	// certificate; "" trusts the system's roots.
	CACert string
	// Cert and Key are PEM files of a client certificate and its key, for
	// a server that requires one (Redis's default, tls-auth-clients yes).
	Cert, Key string
	// Insecure skips checking the server's certificate (encrypted, but
	// anyone in the middle can pose as the server).
	Insecure bool
}

// Config builds the crypto/tls configuration for a server at addr
// (host:port): the certificate must name host. Its errors name the file
// that could not be used.
func (t *TLS) Config(addr string) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	conf := &tls.Config{ServerName: host, InsecureSkipVerify: t.Insecure, MinVersion: tls.VersionTLS12}
	if t.CACert != "" {
		pem, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("cacert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cacert: %s holds no PEM certificate", t.CACert)
		}
		conf.RootCAs = pool
	}
	switch {
	case t.Cert != "" && t.Key != "":
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("cert=%s, key=%s: %w", t.Cert, t.Key, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	case t.Cert != "":
		return nil, errors.New("cert= without key=: a client certificate needs its private key (key=/path/client.key)")
	case t.Key != "":
		return nil, errors.New("key= without cert=: a client key needs its certificate (cert=/path/client.crt)")
	}
	return conf, nil
}

// ExplainTLS adds to an error of a rediss:// session (its TLS handshake,
// or the first reply after it) what the user can do about it, when the
// cause is known: a port that does not speak TLS, a certificate this
// side does not trust, a server that wants a client certificate.
func ExplainTLS(err error) error {
	if hint := tlsHint(err); hint != "" {
		return fmt.Errorf("%w (%s)", err, hint)
	}
	return err
}

func tlsHint(err error) string {
	var (
		header     tls.RecordHeaderError
		unknownCA  x509.UnknownAuthorityError
		wrongHost  x509.HostnameError
		invalid    x509.CertificateInvalidError
		opErr      *net.OpError
		verifyFail *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &header):
		return "the server does not speak TLS on this port: use redis:// for it, or the server's tls-port with rediss://"
	case errors.As(err, &unknownCA):
		return "the server's certificate is signed by an authority this machine does not trust: " +
			"pass that authority's certificate as ?cacert=/path/ca.crt (redis-cli's --cacert), or insecure=true to skip the check"
	case errors.As(err, &wrongHost):
		return "the server's certificate does not name the host in the URL: connect by a name it holds, " +
			"or pass insecure=true to skip the check"
	case errors.As(err, &invalid):
		return "the server's certificate is not valid (expired, or not for a server): renew it, or pass insecure=true to skip the check"
	case errors.As(err, &verifyFail):
		return "the server's certificate could not be verified: pass its authority as ?cacert=/path/ca.crt, or insecure=true"
	case IsRemoteAlert(err) && errors.As(err, &opErr):
		alert := opErr.Err.Error()
		switch {
		case strings.Contains(alert, "certificate required"), strings.Contains(alert, "handshake failure"):
			return "the server requires a client certificate (its tls-auth-clients is yes): pass ?cert=/path/client.crt&key=/path/client.key"
		case strings.Contains(alert, "unknown certificate authority"), strings.Contains(alert, "bad certificate"):
			return "the server refused the client certificate: pass one signed by an authority in the server's tls-ca-cert-file"
		}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		// A plain Redis takes the ClientHello for the start of an inline
		// command and waits for its end of line.
		return "no TLS answer from the server: if this is a plain Redis port, use redis://"
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server hung up during the TLS handshake: is this the server's tls-port? " +
			"For a plain port use redis://; a server that requires client certificates wants ?cert=…&key=…"
	}
	return ""
}

// IsRemoteAlert reports whether err is a TLS alert the server sent (why
// it refused the session).
func IsRemoteAlert(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "remote error"
}

// PlainHint is what to try when a redis:// session's first exchange
// fails without a Redis reply (the server hung up, or sent bytes that
// are not RESP): the port may speak only TLS.
const PlainHint = "if this port speaks TLS only (the server's tls-port, a managed Redis with in-transit encryption), use rediss://"
