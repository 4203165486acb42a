package mariadb_test

import (
	"context"
	"errors"
	"strings"

	"testing"
	"time"

	mdbtarget "github.com/firedrill/firedrill/db/mariadb/client"
	"github.com/firedrill/firedrill/db/mariadb/mdbdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/internal/testcert"
	"github.com/firedrill/firedrill/script"
)

// serverInfo says where the throwaway server of the tests is.
type serverInfo struct {
	addr, user, password, db, socket string
	certs                            testcert.Files // the server's TLS certificate and its CA
}

var server serverInfo

var modes = []string{mdbtarget.ModeSimple, mdbtarget.ModePrepared}

// setupDatabase creates the tables the tests share.
func setupDatabase() error {
	t, err := mdbtarget.NewTarget(baseConfig())
	if err != nil {
		return err
	}
	c, err := t.Connect(context.Background(), 0)
	if err != nil {
		return err
	}
	defer c.Close()
	return execScript(c, `
DROP TABLE IF EXISTS kv;
CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR(40), n BIGINT, d DOUBLE, ts DATETIME(3), dt DATE, tm TIME) ENGINE=InnoDB;
INSERT INTO kv VALUES (1, 'one', 10, 1.5, '2024-01-02 03:04:05.678', '2024-01-02', '-25:00:01'), (2, NULL, NULL, NULL, NULL, NULL, NULL), (3, 'th''ree', -3, -0.25, '1999-12-31 23:59:59', '1999-12-31', '00:00:00');
DROP TABLE IF EXISTS locked;
CREATE TABLE locked (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO locked VALUES (1, 0), (2, 0);
`, nil)
}

// execScript parses src in the MySQL dialect and runs its SQL commands on
// c, stopping at the first error.
func execScript(c engine.Conn, src string, vars *script.Vars) error {
	syms := script.NewSymbols()
	if vars != nil {
		syms = vars.Symbols()
	}
	s, err := script.ParseDialect("test.sql", []byte(src), syms, mdbdialect.Script())
	if err != nil {
		return err
	}
	if vars == nil {
		vars = script.NewVars(syms)
	}
	for _, cmd := range s.Commands {
		if err := c.Exec(context.Background(), cmd, vars); err != nil {
			return err
		}
	}
	return nil
}

func connect(t *testing.T, mode string, mutate ...func(*mdbtarget.Config)) engine.Conn {
	t.Helper()
	cfg := baseConfig()
	cfg.Mode = mode
	for _, m := range mutate {
		m(&cfg)
	}
	target, err := mdbtarget.NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := target.Connect(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func forEachMode(t *testing.T, fn func(t *testing.T, mode string)) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) { fn(t, mode) })
	}
}

func text(t *testing.T, vars *script.Vars, name string) string {
	t.Helper()
	r, ok := vars.Symbols().Lookup(name)
	if !ok {
		t.Fatalf("variable %s was never set", name)
	}
	v, ok := vars.Text(r)
	if !ok {
		t.Fatalf("variable %s is unset", name)
	}
	return v
}

func TestGsetValuesAndNulls(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		c := connect(t, mode)
		syms := script.NewSymbols()
		vars := script.NewVars(syms)
		vars.SetInt(syms.Ref("key"), 1)
		if err := execScript(c, "SELECT k, v, n, d, ts, dt, tm FROM kv WHERE k = :key \\gset one_\n", vars); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"one_k": "1", "one_v": "one", "one_n": "10", "one_d": "1.5",
			"one_ts": "2024-01-02 03:04:05.678", "one_dt": "2024-01-02", "one_tm": "-25:00:01"}
		for name, w := range want {
			if got := text(t, vars, name); got != w {
				t.Errorf("%s = %q, want %q", name, got, w)
			}
		}
		vars.SetInt(syms.Ref("key"), 2)
		if err := execScript(c, "SELECT v, n, d, ts FROM kv WHERE k = :key \\gset null_\n", vars); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"null_v", "null_n", "null_d", "null_ts"} {
			if got := text(t, vars, name); got != "" {
				t.Errorf("%s = %q, want empty (NULL)", name, got)
			}
		}
		// \gset wants exactly one row.
		err := execScript(c, "SELECT k FROM kv \\gset\n", vars)
		if err == nil || !strings.Contains(err.Error(), "expected one row, got 3") {
			t.Errorf("\\gset of 3 rows: %v", err)
		}
		// \aset stores every row: the last one wins.
		if err := execScript(c, "SELECT k AS last FROM kv ORDER BY k \\aset\n", vars); err != nil {
			t.Fatal(err)
		}
		if got := text(t, vars, "last"); got != "3" {
			t.Errorf("\\aset: last = %q, want 3", got)
		}
		// The session is still in step after those.
		if err := execScript(c, "SELECT v AS quoted FROM kv WHERE k = 3 \\gset\n", vars); err != nil {
			t.Fatal(err)
		}
		if got := text(t, vars, "quoted"); got != "th'ree" {
			t.Errorf("quoted = %q", got)
		}
	})
}

func TestMultiStatement(t *testing.T) {
	c := connect(t, mdbtarget.ModeSimple)
	vars := script.NewVars(script.NewSymbols())
	if err := execScript(c, "SELECT 1 AS a \\; SELECT 2 AS b \\gset\n", vars); err != nil {
		t.Fatal(err)
	}
	if text(t, vars, "a") != "1" || text(t, vars, "b") != "2" {
		t.Errorf("a=%s b=%s", text(t, vars, "a"), text(t, vars, "b"))
	}
	// An error in the second statement is reported and ends the response.
	err := execScript(c, "SELECT 1 \\; SELEC 2 \\; SELECT 3;", vars)
	var dbe *engine.DBError
	if !errors.As(err, &dbe) || dbe.Code != "42000/1064" {
		t.Fatalf("syntax error in a compound: %v", err)
	}
	if err := execScript(c, "SELECT 4 AS after \\gset\n", vars); err != nil || text(t, vars, "after") != "4" {
		t.Fatalf("after the error: %v", err)
	}
	// The prepared protocol refuses compounds.
	p := connect(t, mdbtarget.ModePrepared)
	if err := execScript(p, "SELECT 1 \\; SELECT 2;", vars); err == nil || !strings.Contains(err.Error(), "compound") {
		t.Errorf("compound in prepared mode: %v", err)
	}
}

func TestSyntaxError(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		c := connect(t, mode)
		err := execScript(c, "SELEC 1;", nil)
		var dbe *engine.DBError
		if !errors.As(err, &dbe) || dbe.Code != "42000/1064" || !strings.Contains(err.Error(), "1064") {
			t.Fatalf("got %v, want a DBError 42000/1064", err)
		}
		var f *engine.Failure
		if errors.As(err, &f) {
			t.Errorf("a syntax error is a %v failure; want no retry", f.Kind)
		}
		if err := execScript(c, "SELECT 1;", nil); err != nil {
			t.Fatalf("after the error: %v", err)
		}
	})
}

func TestResetRollsBack(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		c := connect(t, mode)
		if err := execScript(c, "BEGIN; UPDATE locked SET v = 99 WHERE id = 1;", nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		vars := script.NewVars(script.NewSymbols())
		if err := execScript(c, "SELECT v FROM locked WHERE id = 1 \\gset\n", vars); err != nil {
			t.Fatal(err)
		}
		if got := text(t, vars, "v"); got != "0" {
			t.Errorf("after Reset v = %s, want 0 (rolled back)", got)
		}
	})
}

// TestDeadlock provokes 1213 with two sessions locking two rows in
// opposite orders.
func TestDeadlock(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		a, b := connect(t, mode), connect(t, mode)
		for _, c := range []engine.Conn{a, b} {
			if err := execScript(c, "BEGIN;", nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := execScript(a, "UPDATE locked SET v = v + 1 WHERE id = 1;", nil); err != nil {
			t.Fatal(err)
		}
		if err := execScript(b, "UPDATE locked SET v = v + 1 WHERE id = 2;", nil); err != nil {
			t.Fatal(err)
		}
		errA := make(chan error, 1)
		go func() { errA <- execScript(a, "UPDATE locked SET v = v + 1 WHERE id = 2;", nil) }()
		time.Sleep(200 * time.Millisecond) // a waits for b's row
		errB := execScript(b, "UPDATE locked SET v = v + 1 WHERE id = 1;", nil)
		var ea error
		select {
		case ea = <-errA:
		case <-time.After(20 * time.Second):
			t.Fatal("no deadlock detected")
		}
		failed := errB
		if failed == nil {
			failed = ea
		}
		var f *engine.Failure
		var dbe *engine.DBError
		if !errors.As(failed, &f) || f.Kind != engine.Deadlock || !errors.As(failed, &dbe) || dbe.Code != "40001/1213" {
			t.Fatalf("errors %v / %v; want one deadlock failure 40001/1213", ea, errB)
		}
		for _, c := range []engine.Conn{a, b} {
			if err := c.Reset(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestLockWaitTimeout provokes 1205 and checks it is retried as a
// deadlock is, under its own code.
func TestLockWaitTimeout(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		holder := connect(t, mode)
		waiter := connect(t, mode, func(c *mdbtarget.Config) {
			c.Session = map[string]string{"innodb_lock_wait_timeout": "1"}
		})
		if err := execScript(holder, "BEGIN; SELECT v FROM locked WHERE id = 1 FOR UPDATE;", nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err := execScript(waiter, "UPDATE locked SET v = 5 WHERE id = 1;", nil)
		var f *engine.Failure
		var dbe *engine.DBError
		if !errors.As(err, &f) || f.Kind != engine.Deadlock || !errors.As(err, &dbe) || dbe.Code != "HY000/1205" {
			t.Fatalf("got %v; want a retried lock wait timeout HY000/1205", err)
		}
		if d := time.Since(start); d < 900*time.Millisecond || d > 10*time.Second {
			t.Errorf("timed out after %v; the session's innodb_lock_wait_timeout is 1 s", d)
		}
		if err := holder.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := waiter.Reset(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestKilledSession: a session the server kills is a lost connection.
func TestKilledSession(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		victim := connect(t, mode)
		killer := connect(t, mdbtarget.ModeSimple)
		vars := script.NewVars(script.NewSymbols())
		if err := execScript(victim, "SELECT CONNECTION_ID() AS id \\gset\n", vars); err != nil {
			t.Fatal(err)
		}
		if err := execScript(killer, "KILL "+text(t, vars, "id")+";", nil); err != nil {
			t.Fatal(err)
		}
		err := execScript(victim, "SELECT 1;", nil)
		var dbe *engine.DBError
		if !errors.As(err, &dbe) || dbe.Code != engine.CodeConnection {
			t.Fatalf("after KILL: %v; want a lost connection (%s)", err, engine.CodeConnection)
		}
		if !strings.Contains(err.Error(), server.addr) {
			t.Errorf("error %q does not name the server %s", err, server.addr)
		}
		if err := victim.Reset(context.Background()); err == nil {
			t.Error("Reset of a lost session succeeded")
		}
	})
}

// TestInterrupt: a soft interrupt kills the statement in flight.
func TestInterrupt(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) { assertInterrupts(t, connect(t, mode)) })
}

// assertInterrupts checks a session's interrupts: a soft one kills the
// statement in flight (KILL QUERY from a side session) and leaves the
// session usable, a hard one ends the session.
func assertInterrupts(t *testing.T, c engine.Conn) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- execScript(c, "SELECT SLEEP(30);", nil) }()
	time.Sleep(300 * time.Millisecond)
	c.Interrupt(false)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("SLEEP(30) still running 10 s after a soft interrupt")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
	if err := execScript(c, "SELECT 1;", nil); err != nil {
		t.Fatalf("after the interrupt: %v", err)
	}
	go func() { done <- execScript(c, "SELECT SLEEP(30);", nil) }()
	time.Sleep(300 * time.Millisecond)
	c.Interrupt(true)
	select {
	case err := <-done:
		var dbe *engine.DBError
		if !errors.As(err, &dbe) || dbe.Code != engine.CodeConnection {
			t.Errorf("hard interrupt: %v; want a lost connection", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SLEEP(30) still running 10 s after a hard interrupt")
	}
}

func TestWrongPassword(t *testing.T) {
	cfg := baseConfig()
	cfg.Password = "not-the-password"
	target, err := mdbtarget.NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = target.Connect(context.Background(), 0)
	if err == nil {
		t.Fatal("connected with a wrong password")
	}
	msg := err.Error()
	for _, want := range []string{server.addr, "1045", "Access denied"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, cfg.Password) {
		t.Errorf("error %q shows the password", msg)
	}
	// Nobody listening: a connect error naming the address.
	cfg = baseConfig()
	cfg.Addr = "127.0.0.1:1"
	target, _ = mdbtarget.NewTarget(cfg)
	_, err = target.Connect(context.Background(), 0)
	var dbe *engine.DBError
	if !errors.As(err, &dbe) || dbe.Code != engine.CodeConnect || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("refused: %v", err)
	}
}

// A server at a connection limit refuses (MariaDB says 1226 for a user's
// MAX_USER_CONNECTIONS, MySQL 1203; 1040 for max_connections): the
// engine must see a refusal to retry, not an error that ends the run.
func TestConnectionLimitIsARefusal(t *testing.T) {
	admin := connect(t, mdbtarget.ModeSimple)
	if err := execScript(admin, `
DROP USER IF EXISTS 'limited'@'%';
CREATE USER 'limited'@'%' IDENTIFIED BY 'limited-pw' WITH MAX_USER_CONNECTIONS 1;
GRANT SELECT ON `+"`"+server.db+"`"+`.* TO 'limited'@'%';
`, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { execScript(admin, "DROP USER IF EXISTS 'limited'@'%';", nil) })
	limited := func(cfg *mdbtarget.Config) { cfg.User, cfg.Password = "limited", "limited-pw" }
	connect(t, mdbtarget.ModeSimple, limited) // its one connection
	// A second one, over MAX_USER_CONNECTIONS 1.
	err := connectErr(t, limited)
	if f := engine.FaultOf(err); f != engine.Refused || !strings.Contains(err.Error(), "max_user_connections") {
		t.Errorf("over the user's limit: %v (fault %v), want the max_user_connections error as a refusal", err, f)
	}
}

func TestUnixSocket(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		c := connect(t, mode, func(c *mdbtarget.Config) { c.Network, c.Addr = "unix", server.socket })
		vars := script.NewVars(script.NewSymbols())
		if err := execScript(c, "SELECT k FROM kv WHERE k = 3 \\gset\n", vars); err != nil {
			t.Fatal(err)
		}
		if got := text(t, vars, "k"); got != "3" {
			t.Errorf("k = %q", got)
		}
	})
}

func TestSessionSettings(t *testing.T) {
	c := connect(t, mdbtarget.ModeSimple, func(c *mdbtarget.Config) {
		c.Session = map[string]string{"tx_isolation": "READ-COMMITTED", "lock_wait_timeout": "7"}
		c.AppName = "fd-test-app"
	})
	vars := script.NewVars(script.NewSymbols())
	if err := execScript(c, "SELECT @@session.tx_isolation AS iso, @@session.lock_wait_timeout AS lwt \\gset\n", vars); err != nil {
		t.Fatal(err)
	}
	if text(t, vars, "iso") != "READ-COMMITTED" || text(t, vars, "lwt") != "7" {
		t.Errorf("iso=%s lwt=%s", text(t, vars, "iso"), text(t, vars, "lwt"))
	}
	_, err := mdbtarget.NewTarget(mdbtarget.Config{Addr: server.addr, Session: map[string]string{"x; DROP": "1"}})
	if err == nil {
		t.Error("a session variable name with SQL in it was accepted")
	}
}

// TestEngineRun runs the engine on its event loops and on goroutines.
func TestEngineRun(t *testing.T) {
	src := "\\set k random(1, 3)\nSELECT v FROM kv WHERE k = :k;\nBEGIN;\nUPDATE locked SET v = v + 1 WHERE id = :k - 1;\nCOMMIT;\n"
	forEachMode(t, func(t *testing.T, mode string) {
		for _, v := range []struct{ goroutines, reconnect bool }{{false, false}, {true, false}, {false, true}} {
			goroutines := v.goroutines
			syms := script.NewSymbols()
			s, err := script.ParseDialect("run.sql", []byte(src), syms, mdbdialect.Script())
			if err != nil {
				t.Fatal(err)
			}
			cfg := baseConfig()
			cfg.Mode = mode
			target, err := mdbtarget.NewTarget(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := engine.Run(context.Background(), target, engine.Config{
				Scripts: []*script.Script{s}, Symbols: syms, Clients: 4, Threads: 2,
				Transactions: 200, Goroutines: goroutines, MaxTries: 10,
				Connect: v.reconnect, // -C: a session per transaction, opened on the loop
			})
			if err != nil {
				t.Fatalf("%+v: %v", v, err)
			}
			if res.Totals.Total.Count != 800 {
				t.Errorf("%+v: %d transactions, want 800", v, res.Totals.Total.Count)
			}
			if v.reconnect && res.Connections != 800 {
				t.Errorf("-C: %d connections, want 800", res.Connections)
			}
		}
	})
}

// TestKilledSessionsOnTheLoop: sessions killed during a run (on the
// event loop) count as lost connections (08006), reconnect and go on.
func TestKilledSessionsOnTheLoop(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		syms := script.NewSymbols()
		s, err := script.ParseDialect("sleep.sql", []byte("SELECT SLEEP(0.02) AS slept;\n"), syms, mdbdialect.Script())
		if err != nil {
			t.Fatal(err)
		}
		cfg := baseConfig()
		cfg.Mode = mode
		target, err := mdbtarget.NewTarget(cfg)
		if err != nil {
			t.Fatal(err)
		}
		killer := connect(t, mdbtarget.ModeSimple)
		killed := make(chan int, 1)
		go func() {
			n := 0
			defer func() { killed <- n }()
			time.Sleep(500 * time.Millisecond)
			// Every session running the workload's statement, once some
			// are found.
			for range 50 {
				vars := script.NewVars(script.NewSymbols())
				_ = execScript(killer, "SELECT GROUP_CONCAT(ID) AS ids FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(0.02)%' \\gset\n", vars)
				ids, _ := vars.Text(vars.Symbols().Ref("ids"))
				if ids == "" {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				for _, id := range strings.Split(ids, ",") {
					if execScript(killer, "KILL "+id+";", nil) == nil {
						n++
					}
				}
				return
			}
		}()
		res, err := engine.Run(context.Background(), target, engine.Config{
			Scripts: []*script.Script{s}, Symbols: syms, Clients: 2, Threads: 1,
			Duration: 2 * time.Second, ContinueOnError: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		lost := int64(0)
		for _, e := range res.Errors {
			if e.Code != engine.CodeConnection {
				t.Errorf("error %s: %s; want only lost connections", e.Code, e.Message)
			}
			lost += e.Count
		}
		if n := <-killed; lost == 0 {
			t.Fatalf("no lost connection counted after %d sessions were killed", n)
		}
		if res.Totals.Total.Count < 20 {
			t.Errorf("%d transactions in 2 s: the clients did not go on after reconnecting", res.Totals.Total.Count)
		}
	})
}

// TestPreparedOncePerText: commands of the same text share one prepared
// statement per session, as sysbench's repeated point selects do.
func TestPreparedOncePerText(t *testing.T) {
	c := connect(t, mdbtarget.ModePrepared)
	syms := script.NewSymbols()
	vars := script.NewVars(syms)
	vars.SetInt(syms.Ref("k"), 3)
	src := "SELECT v FROM kv WHERE k = :k;\nSELECT v FROM kv WHERE k = :k;\nSELECT v FROM kv WHERE k = :k;\n" +
		"SHOW SESSION STATUS LIKE 'Com_stmt_prepare' \\gset\n"
	if err := execScript(c, src, vars); err != nil {
		t.Fatal(err)
	}
	// One for the three selects, one for the SHOW itself.
	if got := text(t, vars, "Value"); got != "2" {
		t.Errorf("Com_stmt_prepare = %s, want 2", got)
	}
}

// TestDeadlocksRetried: deadlocks in a run are retried and counted as
// pgbench counts PostgreSQL's, under their code.
func TestDeadlocksRetried(t *testing.T) {
	src := `\set a random(1, 2)
\set b 3 - :a
BEGIN;
UPDATE locked SET v = v + 1 WHERE id = :a;
SELECT SLEEP(0.005);
UPDATE locked SET v = v + 1 WHERE id = :b;
COMMIT;
`
	forEachMode(t, func(t *testing.T, mode string) {
		syms := script.NewSymbols()
		s, err := script.ParseDialect("deadlock.sql", []byte(src), syms, mdbdialect.Script())
		if err != nil {
			t.Fatal(err)
		}
		cfg := baseConfig()
		cfg.Mode = mode
		target, err := mdbtarget.NewTarget(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := engine.Run(context.Background(), target, engine.Config{
			Scripts: []*script.Script{s}, Symbols: syms, Clients: 4, Threads: 1,
			Duration: 2 * time.Second, MaxTries: 100, ContinueOnError: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		tot := res.Totals.Total
		if tot.Retries == 0 || tot.Count == 0 {
			t.Fatalf("%d transactions, %d retries: want deadlocks retried", tot.Count, tot.Retries)
		}
		for _, e := range res.Errors {
			if e.Code != "40001/1213" {
				t.Errorf("error %s (%s); want only deadlocks", e.Code, e.Message)
			}
		}
		// Only a transaction being retried when the run ended may fail
		// for good, as in pgbench.
		if tot.Failures() > 4 {
			t.Errorf("%d transactions failed for good with 100 tries", tot.Failures())
		}
	})
}
