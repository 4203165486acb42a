package mariadb

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// TLS: a session asks for it with the SSLRequest packet (the handshake
// response's first 32 bytes, with CLIENT_SSL, at sequence 1) right after
// the server's greeting, runs the TLS handshake on the socket, and sends
// the full handshake response (sequence 2) encrypted. From then on the
// session reads and writes through crypto/tls, which cannot run on the
// raw non-blocking descriptor an event loop drives: an encrypted session
// has a goroutine of its own (ConnectLoop answers engine.ErrNoLoop) and
// blocks in its reads and writes.

// capSSL is CLIENT_SSL: the server can switch to TLS, the client asks to.
const capSSL = 1 << 11

// ErrNoTLS is the error of a session that wanted TLS from a server that
// does not offer it.
var ErrNoTLS = errors.New("the server does not offer TLS")

// startTLS sends the SSLRequest and runs the TLS handshake on nc, before
// deadline. It returns with c.tls set, or with an error that says why not.
func (c *conn) startTLS(nc net.Conn, deadline time.Time) error {
	c.caps |= capSSL
	at := c.startPacket()
	c.io.W = appendUint32(c.io.W, c.caps)
	c.io.W = appendUint32(c.io.W, maxPayload)
	c.io.W = append(c.io.W, charsetUTF8MB4)
	c.io.W = c.appendFiller(c.io.W)
	c.endPacket(at)
	if err := c.flush(); err != nil {
		return err
	}
	tc := tls.Client(nc, c.t.cfg.TLS)
	if err := tc.SetDeadline(deadline); err != nil {
		return err
	}
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.io.StartTLS(tc)
	return nil
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

// TLSHint says what to do about a session that failed for want of TLS
// or in it, on a line of its own, in the terms of a mysql:// URL's
// parameters (tls=, ssl-ca=); "" for any other error.
func TLSHint(err error) string {
	var unknown x509.UnknownAuthorityError
	var name x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, ErrNoTLS):
		return "\nThe server was asked for TLS (tls=true) but does not offer it: enable TLS on the server (ssl_cert, ssl_key), " +
			"or use tls=preferred (TLS when offered) or tls=false"
	case errors.As(err, &unknown):
		return "\nThe server's certificate is signed by an authority this machine does not trust: " +
			"give the CA's certificate as ?ssl-ca=/path/ca.pem, or use tls=skip-verify to skip verification"
	case errors.As(err, &name):
		return "\nThe server's certificate is not for the name in the URL: connect by a name (or IP) the certificate holds " +
			"(" + certNames(name.Certificate) + "), or use tls=skip-verify to skip verification"
	case errors.As(err, &invalid):
		return "\nThe server's certificate is not valid (expired or not for a server): renew it, or use tls=skip-verify to skip verification"
	}
	return ""
}

// hintPlainRefused follows a server's "access denied" (1045) to a session
// without TLS: MariaDB refuses one so when it requires TLS
// (require_secure_transport=ON, or the user's REQUIRE SSL), and says no
// more. MySQL says it (3159), and its message names the setting.
const hintPlainRefused = "\nIf the server requires TLS (require_secure_transport=ON, or a user created with REQUIRE SSL), " +
	"connect with TLS: add ?tls=true to the URL (with ssl-ca=/path/ca.pem for a private CA)"

// certNames lists the names and addresses a certificate is for.
func certNames(cert *x509.Certificate) string {
	if cert == nil {
		return "none known"
	}
	var names []string
	names = append(names, cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 && cert.Subject.CommonName != "" {
		names = append(names, cert.Subject.CommonName)
	}
	if len(names) == 0 {
		return "none"
	}
	return fmt.Sprint(names)
}
