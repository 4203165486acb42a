// Package mariadb starts throwaway MariaDB servers from the binaries the
// machine has (Debian's mariadb-server): mariadb-install-db into a fresh
// temp directory, then mariadbd reading only firedrill's own option file,
// listening on a free port of 127.0.0.1 and on a unix socket in that
// directory, and everything removed by Stop. It is the target of scenarios
// with `target: {kind: mariadb}` and the server behind every test that
// needs a real MariaDB.
//
// A MariaDB or MySQL already running on the machine (on 3306 or
// elsewhere) is never touched: no option file of the machine is read
// (/etc/mysql/my.cnf, ~/.my.cnf), and the port is a free one.
//
// The server runs as the unprivileged system user "firedrill" when
// firedrill runs as root, in its own process group with a parent-death
// signal, and a directory left by a killed run is reaped by the next
// Start (see instance/serverproc).
//
// Clients authenticate as the user "firedrill" with a password made for
// the instance (mysql_native_password), over TCP or the socket; the user
// has every privilege, and the database "firedrill" is created for the run.
package mariadb
