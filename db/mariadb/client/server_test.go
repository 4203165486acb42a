package mariadb_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	mdbtarget "github.com/firedrill/firedrill/db/mariadb/client"
	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/internal/testcert"
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests starts the throwaway MariaDB every test shares, runs the tests
// and stops it before TestMain exits (deferred calls do not run past
// os.Exit). A fuzzing worker process needs no server.
func runTests(m *testing.M) int {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	certDir, err := os.MkdirTemp("", "firedrill-mdbtls-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "a directory for the test certificates: %v\n", err)
		return 1
	}
	defer os.RemoveAll(certDir)
	if err := os.Chmod(certDir, 0o755); err != nil { // for the server's user
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	certs, err := testcert.Write(certDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "test certificates: %v\n", err)
		return 1
	}
	inst, err := mdbinstance.Start(ctx, mdbinstance.Options{Settings: map[string]string{
		// Throwaway data: durability only slows the tests down.
		"innodb_flush_log_at_trx_commit": "0",
		"skip_log_bin":                   "",
		// TLS offered, not required: sessions choose.
		"ssl_cert": certs.Cert, "ssl_key": certs.Key, "ssl_ca": certs.CA,
	}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting MariaDB for tests: %v\n", err)
		return 1
	}
	defer func() {
		if err := inst.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping MariaDB: %v\n", err)
		}
	}()
	server = serverInfo{addr: inst.TCPAddr(), user: inst.User(), password: inst.Password(), db: inst.Database(), socket: inst.Socket(), certs: certs}
	if err := setupDatabase(); err != nil {
		fmt.Fprintf(os.Stderr, "creating the test tables: %v\n", err)
		return 1
	}
	return m.Run()
}

func baseConfig() mdbtarget.Config {
	return mdbtarget.Config{Addr: server.addr, User: server.user, Password: server.password, Database: server.db}
}
