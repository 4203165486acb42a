package mariadb

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	mdbtarget "github.com/firedrill/firedrill/db/mariadb/client"
)

// defaultPort is MySQL's and MariaDB's port.
const defaultPort = "3306"

// dsnParams are the query parameters a --dsn URL may carry: socket, and
// tls as go-sql-driver/mysql names it (true, false, skip-verify,
// preferred); ssl-ca, the CA file that verifies the server, is
// firedrill's own (named as the mysql client's --ssl-ca).
var dsnParams = []string{"socket", "tls", "ssl-ca"}

// server is a given server, from a --dsn URL.
type server struct {
	cfg *mysql.Config
	// Database is the database the URL names (the user's; firedrill
	// works in its own), "" when it names none.
	Database string
	// tls is the load target's TLS (nil: none), from the same parameters
	// as cfg's; tlsOptional, for tls=preferred.
	tls         *tls.Config
	tlsOptional bool
}

// parseDSN reads a given server's URL:
// mysql://user:password@host:port/database?socket=/run/mysqld/mysqld.sock
// (mariadb:// too). The port defaults to 3306; a socket parameter
// connects through the unix socket instead of TCP.
func parseDSN(dsn string) (*server, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("read the server's URL: %w", errors.Unwrap(err))
	}
	if u.Scheme != "mysql" && u.Scheme != "mariadb" {
		return nil, fmt.Errorf("the server's URL must start with mysql:// or mariadb://, as in mysql://app:secret@127.0.0.1:3306/shop")
	}
	cfg := mysql.NewConfig()
	cfg.Logger = &mysql.NopLogger{}
	cfg.Timeout = 10 * time.Second
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if cfg.User == "" {
		return nil, fmt.Errorf("the server's URL names no user, as in mysql://app:secret@%s/", u.Host)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = defaultPort
	}
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, port)
	query := u.Query()
	for key := range query {
		if !slices.Contains(dsnParams, key) {
			return nil, fmt.Errorf("the server's URL has the parameter %q; firedrill takes %s", key, strings.Join(dsnParams, " and "))
		}
	}
	if socket := query.Get("socket"); socket != "" {
		cfg.Net, cfg.Addr = "unix", socket
	}
	srv := &server{cfg: cfg, Database: strings.TrimPrefix(u.Path, "/")}
	if err := srv.setTLS(query.Get("tls"), query.Get("ssl-ca"), host); err != nil {
		return nil, err
	}
	return srv, nil
}

// setTLS sets the driver's and the load target's TLS from the URL's tls
// and ssl-ca parameters, for a server reached by host.
func (srv *server) setTLS(mode, caFile, host string) error {
	if caFile != "" && mode == "" {
		mode = "true" // a CA to verify with asks for verified TLS
	}
	switch mode {
	case "", "false":
		return nil
	case "true":
		srv.tls = &tls.Config{ServerName: host}
		srv.cfg.TLSConfig = "true"
		if caFile != "" {
			roots, err := readCAs(caFile)
			if err != nil {
				return err
			}
			srv.tls.RootCAs = roots
			// The driver takes a TLS configuration by name; the name
			// says which CA file, so two runs in one process agree.
			sum := sha256.Sum256([]byte(caFile))
			name := "firedrill-ssl-ca-" + hex.EncodeToString(sum[:8])
			if err := mysql.RegisterTLSConfig(name, &tls.Config{RootCAs: roots}); err != nil {
				return fmt.Errorf("ssl-ca=%s: %w", caFile, err)
			}
			srv.cfg.TLSConfig = name
		}
	case "skip-verify", "preferred":
		if caFile != "" {
			return fmt.Errorf("the server's URL has ssl-ca= with tls=%s, which verifies nothing: use tls=true to verify the server against the CA", mode)
		}
		srv.tls = &tls.Config{InsecureSkipVerify: true} // as the driver does: preferred cannot be verified, it falls back anyway
		srv.tlsOptional = mode == "preferred"
		srv.cfg.TLSConfig = mode
	default:
		return fmt.Errorf("the server's URL has tls=%s: use tls=true (verify the server; with ssl-ca=/path/ca.pem for a private CA), "+
			"tls=skip-verify (encrypt, verify nothing), tls=preferred (TLS when the server offers it) or tls=false", mode)
	}
	if srv.cfg.Net == "unix" && mode == "true" {
		return fmt.Errorf("the server's URL has tls=true with socket=: a unix socket has no host name to verify; " +
			"leave TLS off there (the socket is local), or use tls=skip-verify")
	}
	return nil
}

// readCAs reads the PEM file of CA certificates that ssl-ca names.
func readCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the server's URL has ssl-ca=%s: %w", path, errors.Unwrap(err))
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the server's URL has ssl-ca=%s, which holds no PEM certificate (-----BEGIN CERTIFICATE-----)", path)
	}
	return roots, nil
}

// address is where the server is, for run.json and messages: host:port
// or the socket's path; never a password.
func address(cfg *mysql.Config) string { return cfg.Addr }

// connectHint says what to do about a failed connection to addr as user.
func connectHint(addr, user string, err error) error {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return fmt.Errorf("connect to %s as %s: %w%s", addr, user, err, hintFor(err))
	}
	return fmt.Errorf("connect to %s: %w%s", addr, err, hintFor(err))
}

// hintFor is what to do about a failed connection, on a line of its own;
// "" for an error that is no failed connection.
func hintFor(err error) string {
	if errors.Is(err, mysql.ErrNoTLS) {
		return mdbtarget.TLSHint(mdbtarget.ErrNoTLS)
	}
	if hint := mdbtarget.TLSHint(err); hint != "" {
		return hint
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		if myErr.Number == 1045 { // ER_ACCESS_DENIED_ERROR
			// MariaDB refuses so a session without TLS when it requires TLS.
			return "\nThe server refused the user or password: check them in --dsn (mysql://user:password@host:port/db), " +
				"and that the user may connect from this host (SELECT user, host FROM mysql.user); " +
				"if the server requires TLS (require_secure_transport=ON, or REQUIRE SSL), add ?tls=true"
		}
		return ""
	}
	return "\nIs a MariaDB or MySQL server running and accepting connections there? " +
		"Check --dsn or the scenario's target.dsn, or remove them to use an embedded server"
}
