package cli

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	mariadb "github.com/firedrill/firedrill/db/mariadb/instance"
)

// On a given MariaDB the confined account a run makes exists only while
// the run does: gone after a normal end and after Ctrl-C; after a SIGKILL,
// dropped by the next run and by 'firedrill restore'. So are the settings
// the killed run changed.
func TestMariaDBConfinedAccountLivesOnlyWithItsRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server and child processes")
	}
	inst, err := mariadb.Start(t.Context(), mariadb.Options{})
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
	admin := sql.OpenDB(connector)
	defer admin.Close()
	accounts := func() int {
		var n int
		if err := admin.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'firedrill\_run\_%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	variable := func() string {
		var v string
		if err := admin.QueryRowContext(t.Context(), "SELECT @@GLOBAL.innodb_lock_wait_timeout").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	original := variable()

	tmp := privateTmp(t)
	dsn := (&url.URL{Scheme: "mysql", User: url.UserPassword(inst.User(), inst.Password()), Host: inst.TCPAddr()}).String()
	scenarioFile := func(duration string) string {
		path := filepath.Join(tmp, "confined-"+duration+".yaml")
		src := `name: confined
duration: ` + duration + `
setup:
  sql: ["CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, n INT)", "REPLACE INTO t VALUES (1, 0)"]
workloads:
  - {name: w, clients: 2, scripts: [{inline: "UPDATE t SET n = n + 1 WHERE id = 1;"}]}
events:
  - {kind: settings, at: 100ms, settings: {innodb_lock_wait_timeout: 9}}
`
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	long, short := scenarioFile("60s"), scenarioFile("1s")
	runs := filepath.Join(tmp, "runs")

	// A normal end.
	runCLI(t, tmp, "run", short, "--dsn", dsn, "--out", runs)
	if n := accounts(); n != 0 || variable() != original {
		t.Fatalf("after a normal end: %d accounts, innodb_lock_wait_timeout %s", n, variable())
	}

	// startKilled starts a long run, waits until its account and its
	// settings event are there, and signals it.
	signalled := func(sig syscall.Signal) string {
		cmd, out := startCLI(t, tmp, "run", long, "--dsn", dsn, "--out", runs)
		if !waitUntil(60*time.Second, func() bool { return accounts() == 1 && variable() == "9" }) {
			t.Fatalf("the run made no account or never changed the setting:\n%s", out.String())
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		return out.String()
	}
	if log := signalled(syscall.SIGINT); accounts() != 0 || variable() != original {
		t.Fatalf("after Ctrl-C: %d accounts, innodb_lock_wait_timeout %s\n%s", accounts(), variable(), log)
	}
	signalled(syscall.SIGKILL)
	if n := accounts(); n != 1 {
		t.Fatalf("after SIGKILL: %d accounts, want the killed run's", n)
	}
	log := runCLI(t, tmp, "run", short, "--dsn", dsn, "--out", runs)
	if !strings.Contains(log, "before the run: dropped the account 'firedrill_run_") || accounts() != 0 || variable() != original {
		t.Fatalf("the next run: %d accounts, innodb_lock_wait_timeout %s\n%s", accounts(), variable(), log)
	}
	signalled(syscall.SIGKILL)
	log = runCLI(t, tmp, "restore", "--dsn", dsn)
	if !strings.Contains(log, "dropped the account 'firedrill_run_") || !strings.Contains(log, "innodb_lock_wait_timeout: set back to "+original) ||
		accounts() != 0 || variable() != original {
		t.Fatalf("firedrill restore: %d accounts, innodb_lock_wait_timeout %s\n%s", accounts(), variable(), log)
	}
	if log := runCLI(t, tmp, "restore", "--dsn", dsn); !strings.Contains(log, "nothing to restore") {
		t.Errorf("a second restore:\n%s", log)
	}
}
