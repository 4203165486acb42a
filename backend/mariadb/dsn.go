package mariadb

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// defaultPort is MySQL's and MariaDB's port.
const defaultPort = "3306"

// dsnParams are the query parameters a --dsn URL may carry.
var dsnParams = []string{"socket", "tls"}

// server is a given server, from a --dsn URL.
type server struct {
	cfg *mysql.Config
	// Database is the database the URL names (the user's; firedrill
	// works in its own), "" when it names none.
	Database string
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
	switch tls := query.Get("tls"); tls {
	case "", "false":
	default:
		return nil, fmt.Errorf("the server's URL has tls=%s: firedrill's MySQL client does not speak TLS yet; "+
			"connect without it (tls=false), through the server's unix socket (?socket=/run/mysqld/mysqld.sock), or over an SSH tunnel", tls)
	}
	return &server{cfg: cfg, Database: strings.TrimPrefix(u.Path, "/")}, nil
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
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		if myErr.Number == 1045 { // ER_ACCESS_DENIED_ERROR
			return "\nThe server refused the user or password: check them in --dsn (mysql://user:password@host:port/db), " +
				"and that the user may connect from this host (SELECT user, host FROM mysql.user)"
		}
		return ""
	}
	return "\nIs a MariaDB or MySQL server running and accepting connections there? " +
		"Check --dsn or the scenario's target.dsn, or remove them to use an embedded server"
}
