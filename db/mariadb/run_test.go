package mariadb_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/backend/backendtest"
	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/timeline"
)

// A whole run against a user's server — setup, a workload on tables named
// as the user's, a settings, an sql and a hold_transaction event — leaves
// the user's database, its rows and the server's variables as they were,
// also when the run is cancelled (Ctrl-C) in the middle.
func TestARunOnAUsersServerLeavesItsData(t *testing.T) {
	t.Parallel()
	inst, err := mdbinstance.Start(t.Context(), mdbinstance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User, cfg.Passwd = "tcp", inst.TCPAddr(), inst.User(), inst.Password()
	cfg.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	for _, stmt := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.stock (id INT PRIMARY KEY, qty INT)",
		"INSERT INTO shop.stock VALUES (1, 100), (2, 200)",
		"CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, sku INT)",
		"INSERT INTO shop.orders (sku) VALUES (1), (2), (1)",
		"SET GLOBAL innodb_lock_wait_timeout = 50",
	} {
		if _, err := db.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	before := usersState(t, db)
	src := `name: users-server
duration: 3s
setup:
  sql:
    - "DROP TABLE IF EXISTS stock; CREATE TABLE stock (id INT PRIMARY KEY, qty INT); INSERT INTO stock VALUES (1, 100000), (2, 100000)"
    - "DROP TABLE IF EXISTS orders; CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, sku INT)"
workloads:
  - name: app
    clients: 4
    scripts:
      - inline: |
          \set id random(1, 2)
          UPDATE stock SET qty = qty - 1 WHERE id = :id;
          INSERT INTO orders (sku) VALUES (:id);
events:
  - {kind: settings, at: 500ms, settings: {innodb_lock_wait_timeout: 3, max_connections: 90}}
  - {kind: sql, at: 1s, sql: "DELETE FROM orders WHERE sku = 2"}
  - {kind: hold_transaction, at: 1500ms, duration: 1s, sql: "SELECT * FROM stock WHERE id = 1 FOR UPDATE"}
`
	dsn := (&url.URL{Scheme: "mysql", User: url.UserPassword(inst.User(), inst.Password()), Host: inst.TCPAddr(), Path: "/shop"}).String()
	for _, cancelAt := range []time.Duration{0, 1200 * time.Millisecond} {
		t.Run(fmt.Sprintf("cancelled at %v", cancelAt), func(t *testing.T) {
			res, log := backendtest.RunOnGivenServer(t, src, dsn, cancelAt)
			if cancelAt == 0 {
				m := res.Manifest
				if m.Target.Kind != "mariadb" || m.Target.Embedded || strings.Contains(m.Target.Address, inst.Password()) || len(m.Settings) == 0 {
					t.Errorf("target %+v, %d settings", m.Target, len(m.Settings))
				}
				var tx int64
				run, err := timeline.Open(res.Dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, iv := range run.Intervals {
					tx += iv.Count
				}
				if tx == 0 {
					t.Error("no transaction completed: the test would prove nothing")
				}
			}
			if after := usersState(t, db); after != before {
				t.Errorf("the user's server changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if strings.Contains(log, inst.Password()) {
				t.Errorf("the log shows the password")
			}
		})
	}
}

// usersState is the user's rows and the variables the run changes.
func usersState(t *testing.T, db *sql.DB) string {
	t.Helper()
	var lines []string
	for _, query := range []string{
		"SELECT GROUP_CONCAT(id, ':', qty ORDER BY id) FROM shop.stock",
		"SELECT GROUP_CONCAT(id, ':', sku ORDER BY id) FROM shop.orders",
		"SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop'",
		"SELECT @@GLOBAL.innodb_lock_wait_timeout",
		"SELECT @@GLOBAL.max_connections",
	} {
		var v sql.NullString
		if err := db.QueryRowContext(t.Context(), query).Scan(&v); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		lines = append(lines, query+" = "+v.String)
	}
	return strings.Join(lines, "\n")
}
