package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	pgtarget "github.com/firedrill/firedrill/db/postgres/client"
	"github.com/firedrill/firedrill/db/postgres/client/tpcb"
	pginstance "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// server is the throwaway PostgreSQL every test in this package shares,
// with pgbench's tables at scale 1. Tests run one after another: several
// look at every session of the application name the engine uses.
var server *pginstance.Instance

// appName is the application_name of the engine's sessions, so tests can
// find them in pg_stat_activity; setup and checks use other names.
const appName = "test"

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

// runTests starts the server, runs the tests and stops the server before
// TestMain exits (deferred calls do not run past os.Exit).
func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := pginstance.Start(ctx, pginstance.Options{Settings: map[string]string{
		// Throwaway data: durability only slows the tests down.
		"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
		// Deadlocks are found after this long; the default 1 s would make
		// the deadlock test slow.
		"deadlock_timeout": "10ms",
	}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting PostgreSQL for tests: %v\n", err)
		return 1
	}
	defer func() {
		if err := inst.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping PostgreSQL: %v\n", err)
		}
	}()
	pg, err := pgconn.Connect(ctx, inst.ConnString())
	if err != nil {
		fmt.Fprintf(os.Stderr, "connecting to PostgreSQL: %v\n", err)
		return 1
	}
	err = tpcb.Init(ctx, pg, tpcb.InitOptions{Scale: 1}, nil)
	_ = pg.Close(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating pgbench tables: %v\n", err)
		return 1
	}
	server = inst
	return m.Run()
}

var modes = []pgtarget.QueryMode{pgtarget.Simple, pgtarget.Extended, pgtarget.Prepared}

// forEachMode runs fn as one subtest per query protocol, as pgx reruns its
// tests per protocol mode, and each twice: with the clients on the
// engine's event loop (the raw-socket session, loopconn.go) and on
// goroutines of their own (the pgconn session, conn.go, which runs with an
// application pool or TLS).
func forEachMode(t *testing.T, fn func(t *testing.T, mode pgtarget.QueryMode)) {
	t.Helper()
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) { fn(t, mode) })
		t.Run(mode.String()+goroutinesSuffix, func(t *testing.T) { fn(t, mode) })
	}
}

const goroutinesSuffix = "-goroutines"

// onGoroutines says whether a (sub)test runs its clients on goroutines.
func onGoroutines(t testing.TB) bool { return strings.Contains(t.Name(), goroutinesSuffix) }

// admin opens a session for setup and checks, closed when the test ends.
func admin(t testing.TB) *pgconn.PgConn {
	t.Helper()
	pg, err := pgconn.Connect(context.Background(), server.ConnString()+" application_name=test-admin")
	if err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	t.Cleanup(func() { _ = pg.Close(context.Background()) })
	return pg
}

// sqlExec runs setup statements (several may be joined by semicolons).
func sqlExec(t testing.TB, pg *pgconn.PgConn, sql string) {
	t.Helper()
	if _, err := pg.Exec(context.Background(), sql).ReadAll(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// setup runs create now and drop when the test ends, so that the package
// can run again (-count) on the same server.
func setup(t testing.TB, pg *pgconn.PgConn, create, drop string) {
	t.Helper()
	sqlExec(t, pg, create)
	t.Cleanup(func() {
		if _, err := pg.Exec(context.Background(), drop).ReadAll(); err != nil {
			t.Errorf("%s: %v", drop, err)
		}
	})
}

// queryRows returns the rows of one query as text, NULL as "NULL".
func queryRows(t testing.TB, pg *pgconn.PgConn, sql string) [][]string {
	t.Helper()
	res := pg.ExecParams(context.Background(), sql, nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatalf("%s: %v", sql, res.Err)
	}
	rows := make([][]string, 0, len(res.Rows))
	for _, r := range res.Rows {
		row := make([]string, len(r))
		for i, v := range r {
			if v == nil {
				row[i] = "NULL"
			} else {
				row[i] = string(v)
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// queryInt returns the single integer a query computes.
func queryInt(t testing.TB, pg *pgconn.PgConn, sql string) int64 {
	t.Helper()
	rows := queryRows(t, pg, sql)
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("%s: got %v, want one value", sql, rows)
	}
	n, err := strconv.ParseInt(rows[0][0], 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// sessions counts the engine's sessions on the server.
func sessions(t testing.TB, pg *pgconn.PgConn) int64 {
	t.Helper()
	return queryInt(t, pg, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"+appName+"'")
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newConfig parses scripts (name, source pairs; "builtin:NAME" as a source
// means that builtin) into a run configuration that tries each
// transaction once.
func newConfig(t testing.TB, scripts ...string) engine.Config {
	t.Helper()
	syms := script.NewSymbols()
	cfg := engine.Config{Symbols: syms, Scale: 1, MaxTries: 1, RandomSeed: 1}
	for i := 0; i < len(scripts); i += 2 {
		name, src := scripts[i], scripts[i+1]
		var s *script.Script
		var err error
		if b, ok := strings.CutPrefix(src, "builtin:"); ok {
			s, err = script.Builtin(b, syms)
		} else {
			s, err = script.Parse(name, []byte(src), syms)
		}
		if err != nil {
			t.Fatalf("script %s: %v", name, err)
		}
		cfg.Scripts = append(cfg.Scripts, s)
	}
	return cfg
}

func newTarget(t testing.TB, mode pgtarget.QueryMode) *pgtarget.Target {
	t.Helper()
	target, err := pgtarget.NewTarget(server.ConnString(), mode, appName)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// run runs cfg in mode and returns the result, what the engine wrote to
// stderr, and Run's error.
func run(t testing.TB, ctx context.Context, mode pgtarget.QueryMode, cfg engine.Config) (*engine.Result, string, error) {
	t.Helper()
	var stderr bytes.Buffer
	cfg.Stderr = &stderr
	cfg.Goroutines = onGoroutines(t)
	res, err := engine.Run(ctx, newTarget(t, mode), cfg)
	return res, stderr.String(), err
}

// outcome is what a run started in the background ended with.
type outcome struct {
	res    *engine.Result
	stderr string
	err    error
}

// start runs cfg in the background, for tests that act on the server
// while the run goes on.
func start(t testing.TB, ctx context.Context, mode pgtarget.QueryMode, cfg engine.Config) <-chan outcome {
	t.Helper()
	target := newTarget(t, mode)
	cfg.Goroutines = onGoroutines(t)
	done := make(chan outcome, 1)
	go func() {
		var stderr bytes.Buffer
		cfg.Stderr = &stderr
		res, err := engine.Run(ctx, target, cfg)
		done <- outcome{res, stderr.String(), err}
	}()
	return done
}

// runOK runs cfg and fails the test unless every client finished.
func runOK(t testing.TB, mode pgtarget.QueryMode, cfg engine.Config) *engine.Result {
	t.Helper()
	res, stderr, err := run(t, context.Background(), mode, cfg)
	if err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
	}
	return res
}

// txRecorder keeps every transaction the engine logs.
type txRecorder struct {
	mu  sync.Mutex
	txs []engine.TxRecord
}

func (r *txRecorder) Log(tx *engine.TxRecord) {
	r.mu.Lock()
	r.txs = append(r.txs, *tx)
	r.mu.Unlock()
}

func TestTransactionCountIsExact(t *testing.T) {
	const clients, perClient = 4, 50
	pg := admin(t)
	for _, builtin := range []struct {
		name         string
		historyPerTx int64 // rows each transaction adds to pgbench_history
	}{
		// Seven commands in BEGIN … END, one history row each.
		{"tpcb-like", 1},
		// Three updates fewer, still one history row.
		{"simple-update", 1},
		// One \set and one SELECT, outside any explicit transaction.
		{"select-only", 0},
	} {
		t.Run(builtin.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
				cfg := newConfig(t, builtin.name, "builtin:"+builtin.name)
				cfg.Clients, cfg.Transactions, cfg.PerCommand = clients, perClient, true
				before := queryInt(t, pg, "SELECT count(*) FROM pgbench_history")
				res := runOK(t, mode, cfg)
				after := queryInt(t, pg, "SELECT count(*) FROM pgbench_history")

				const want = clients * perClient
				tot := res.Totals
				if tot.Total.Count != want || tot.Total.Total() != want {
					t.Errorf("Count = %d, Total() = %d, want %d", tot.Total.Count, tot.Total.Total(), want)
				}
				if n := tot.Hist.Count(); n != want {
					t.Errorf("histogram count = %d, want %d", n, want)
				}
				if tot.Total.Latency.Count != want {
					t.Errorf("Latency.Count = %d, want %d", tot.Total.Latency.Count, want)
				}
				if s := tot.Scripts[0]; s.Count != want || s.Hist.Count() != want {
					t.Errorf("script: Count = %d, histogram count = %d, want %d", s.Count, s.Hist.Count(), want)
				}
				for i, c := range tot.Scripts[0].Commands {
					if c.Count != want || c.Latency.Max < c.Latency.P50 {
						t.Errorf("command %d (%s): Count = %d (want %d), percentiles %+v",
							i, cfg.Scripts[0].Commands[i].Text, c.Count, want, c.Latency)
					}
				}
				if grew := after - before; grew != want*builtin.historyPerTx {
					t.Errorf("pgbench_history grew by %d rows, want %d", grew, want*builtin.historyPerTx)
				}
				if res.Connections != clients || res.AbortedClient != 0 || res.Interrupted {
					t.Errorf("Connections = %d, AbortedClient = %d, Interrupted = %v; want %d, 0, false",
						res.Connections, res.AbortedClient, res.Interrupted, clients)
				}
			})
		})
	}
}

func TestGsetAndAsetStoreVariables(t *testing.T) {
	pg := admin(t)
	setup(t, pg, "CREATE TABLE gset_out (mode int, client int, a int, b int, c int, d int)", "DROP TABLE gset_out")
	// \gset with a prefix stores one row's columns; \aset stores every
	// row, so the last one wins; client_id shows each client kept its
	// own variables. (Values are numbers: the simple protocol substitutes
	// them into the text unquoted, as pgbench does.)
	const src = `SELECT 7 + :client_id AS a, 100 * (:client_id + 1) AS b \gset p_
SELECT c, 10 * c AS d FROM generate_series(1, 3) AS c \aset q_
INSERT INTO gset_out VALUES (:mode, :client_id, :p_a, :p_b, :q_c, :q_d);
`
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		cfg := newConfig(t, "gset.sql", src)
		cfg.Clients, cfg.Transactions = 2, 3
		cfg.Defines = modeDefine(t, mode)
		runOK(t, mode, cfg)
		got := queryRows(t, pg, fmt.Sprintf("SELECT client, a, b, c, d, count(*) FROM gset_out WHERE mode = %d GROUP BY 1, 2, 3, 4, 5 ORDER BY 1", modeNum(t, mode)))
		want := [][]string{{"0", "7", "100", "3", "30", "3"}, {"1", "8", "200", "3", "30", "3"}}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("gset_out (client, a, b, c, d, count) = %v, want %v", got, want)
		}
	})
}

// modeDefine sets :mode to the protocol's number (plus 10 on goroutines),
// so rows written by a script say which subtest ran it.
func modeDefine(t testing.TB, mode pgtarget.QueryMode) []engine.Define {
	return []engine.Define{{Name: "mode", Value: strconv.Itoa(modeNum(t, mode))}}
}

func modeNum(t testing.TB, mode pgtarget.QueryMode) int {
	if onGoroutines(t) {
		return int(mode) + 10
	}
	return int(mode)
}

func TestScriptErrorsAbortTheClient(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		modes []pgtarget.QueryMode
		want  string // in the abort message
	}{
		// \gset needs exactly one row, as pgbench's "expected one row".
		{"gset no row", "SELECT 1 AS a WHERE false \\gset\n", modes, "expected one row, got 0"},
		{"gset two rows", "SELECT 1 AS a FROM generate_series(1, 2) \\gset\n", modes, "expected one row, got 2"},
		// pgbench refuses pipelines with the simple protocol at run time.
		{
			"pipeline in simple mode", "\\startpipeline\nSELECT 1;\n\\endpipeline\n",
			[]pgtarget.QueryMode{pgtarget.Simple}, "cannot use pipeline mode with the simple query protocol",
		},
		// A SQL error that is not a serialization failure or a deadlock.
		{"sql error", "SELECT 1 / 0;\n", modes, "division by zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range tt.modes {
				t.Run(mode.String(), func(t *testing.T) {
					cfg := newConfig(t, "bad.sql", tt.src)
					cfg.Clients, cfg.Transactions = 1, 5
					res, stderr, err := run(t, context.Background(), mode, cfg)
					if !errors.Is(err, engine.ErrAborted) {
						t.Fatalf("Run error = %v, want ErrAborted", err)
					}
					if res.AbortedClient != 1 || res.Totals.Total.Count != 0 {
						t.Errorf("AbortedClient = %d, Count = %d, want 1, 0", res.AbortedClient, res.Totals.Total.Count)
					}
					if !strings.Contains(stderr, "client 0") || !strings.Contains(stderr, tt.want) {
						t.Errorf("stderr = %q, want client 0's abort with %q", stderr, tt.want)
					}
				})
			}
		})
	}
}

func TestConditionalsChooseOneBranch(t *testing.T) {
	pg := admin(t)
	setup(t, pg, "CREATE TABLE branch_log (mode int, r int, branch text)", "DROP TABLE branch_log")
	const src = `\set r random(0, 3)
\if :r = 0
INSERT INTO branch_log VALUES (:mode, :r, 'if');
\elif :r = 1
INSERT INTO branch_log VALUES (:mode, :r, 'elif1');
\elif :r = 2
INSERT INTO branch_log VALUES (:mode, :r, 'elif2');
\else
\if :r > 100
INSERT INTO branch_log VALUES (:mode, :r, 'nested');
\endif
INSERT INTO branch_log VALUES (:mode, :r, 'else');
\endif
INSERT INTO branch_log VALUES (:mode, :r, 'after');
`
	const txs = 100
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		cfg := newConfig(t, "if.sql", src)
		cfg.Clients, cfg.Transactions = 2, txs/2
		cfg.Defines = modeDefine(t, mode)
		runOK(t, mode, cfg)
		got := queryRows(t, pg, fmt.Sprintf("SELECT r, branch, count(*) FROM branch_log WHERE mode = %d AND branch <> 'after' GROUP BY 1, 2 ORDER BY 1", modeNum(t, mode)))
		wantBranch := []string{"if", "elif1", "elif2", "else"}
		if len(got) != len(wantBranch) {
			t.Fatalf("branches taken (r, branch, count): %v, want one branch for each r in 0..3", got)
		}
		sum := 0
		for i, row := range got {
			if row[0] != strconv.Itoa(i) || row[1] != wantBranch[i] {
				t.Errorf("r = %s ran branch %q, want r = %d to run %q", row[0], row[1], i, wantBranch[i])
			}
			n, _ := strconv.Atoi(row[2])
			sum += n
		}
		// Exactly one branch per transaction, and the command after
		// \endif always ran.
		after := queryInt(t, pg, fmt.Sprintf("SELECT count(*) FROM branch_log WHERE mode = %d AND branch = 'after'", modeNum(t, mode)))
		if sum != txs || after != txs {
			t.Errorf("%d branch rows and %d rows after \\endif, want %d of each", sum, after, txs)
		}
	})
}

func TestPipelines(t *testing.T) {
	pg := admin(t)
	setup(t, pg, "CREATE TABLE pipe_log (mode int, client int, v int)", "DROP TABLE pipe_log")
	// Commands before and after a \syncpipeline, with parameters, and a
	// \gset right after \endpipeline. (pgbench 15 refuses \gset inside a
	// pipeline, and so does the parser.)
	const src = `\set v 40 + :client_id
\startpipeline
INSERT INTO pipe_log VALUES (:mode, :client_id, 1);
SELECT 1 / 1;
\syncpipeline
INSERT INTO pipe_log VALUES (:mode, :client_id, 2);
INSERT INTO pipe_log VALUES (:mode, :client_id, :v);
\endpipeline
SELECT count(*) AS rows FROM pipe_log WHERE mode = :mode AND client = :client_id \gset
INSERT INTO pipe_log SELECT :mode, :client_id, 1000 WHERE :rows % 3 <> 0;
`
	for _, mode := range []pgtarget.QueryMode{pgtarget.Extended, pgtarget.Prepared} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := newConfig(t, "pipeline.sql", src)
			cfg.Clients, cfg.Transactions = 2, 10
			cfg.Defines = modeDefine(t, mode)
			res := runOK(t, mode, cfg)
			if res.Totals.Total.Count != 20 {
				t.Errorf("Count = %d, want 20", res.Totals.Total.Count)
			}
			got := queryRows(t, pg, fmt.Sprintf("SELECT v, count(*) FROM pipe_log WHERE mode = %d GROUP BY v ORDER BY v", modeNum(t, mode)))
			// Each client's :v; and all three rows of each pipeline were
			// there once it ended, so the last insert never ran.
			want := [][]string{{"1", "20"}, {"2", "20"}, {"40", "10"}, {"41", "10"}}
			if !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("pipe_log (v, count) = %v, want %v", got, want)
			}
		})
	}
}

func TestPipelineRetriedAfterFailure(t *testing.T) {
	pg := admin(t)
	setup(t, pg, `CREATE TABLE pipe_retry (mode int, v int);
CREATE SEQUENCE fail_seq;
CREATE FUNCTION fail_first() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	-- nextval is not rolled back: only the very first call fails.
	IF nextval('fail_seq') = 1 THEN
		RAISE EXCEPTION 'first call fails' USING ERRCODE = '40001';
	END IF;
	RETURN 1;
END $$`, "DROP TABLE pipe_retry; DROP FUNCTION fail_first(); DROP SEQUENCE fail_seq")
	// The first transaction fails at its first command, so the server
	// skips the rest of that sync segment (in prepared mode, the first
	// INSERT's Parse) while the next segment runs; the retry must still
	// find every statement.
	const src = `\startpipeline
SELECT fail_first();
INSERT INTO pipe_retry VALUES (:mode, 1);
\syncpipeline
INSERT INTO pipe_retry VALUES (:mode, 2);
\endpipeline
`
	for _, mode := range []pgtarget.QueryMode{pgtarget.Extended, pgtarget.Prepared} {
		t.Run(mode.String(), func(t *testing.T) {
			sqlExec(t, pg, "ALTER SEQUENCE fail_seq RESTART")
			cfg := newConfig(t, "pipeline-retry.sql", src)
			cfg.Clients, cfg.Transactions, cfg.MaxTries = 1, 3, 2
			cfg.Defines = modeDefine(t, mode)
			tot := runOK(t, mode, cfg).Totals.Total
			if tot.Count != 3 || tot.Retried != 1 || tot.Retries != 1 || tot.Failures() != 0 {
				t.Errorf("Count = %d, Retried = %d, Retries = %d, Failures() = %d; want 3, 1, 1, 0",
					tot.Count, tot.Retried, tot.Retries, tot.Failures())
			}
			// Each segment is a transaction of its own: the failed try's
			// second segment committed.
			got := queryRows(t, pg, fmt.Sprintf("SELECT v, count(*) FROM pipe_retry WHERE mode = %d GROUP BY v ORDER BY v", modeNum(t, mode)))
			if want := [][]string{{"1", "3"}, {"2", "4"}}; !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("pipe_retry (v, count) = %v, want %v", got, want)
			}
		})
	}
}

func TestSerializationFailuresAreRetried(t *testing.T) {
	pg := admin(t)
	setup(t, pg, "CREATE TABLE hot (id int PRIMARY KEY, v int); INSERT INTO hot VALUES (1, 0)", "DROP TABLE hot")
	// Eight clients update one row in REPEATABLE READ: whoever waited for
	// the row while another committed gets SQLSTATE 40001.
	const src = `BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE hot SET v = v + 1 WHERE id = 1;
END;
`
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		failureRatio := func(s *engine.Stats) float64 { return float64(s.Failures()) / float64(s.Total()) }

		cfg := newConfig(t, "hot.sql", src)
		cfg.Clients, cfg.Duration, cfg.MaxTries = 8, time.Second, 1
		once := runOK(t, mode, cfg).Totals.Total
		if once.SerializationFailures == 0 || once.Retried != 0 || once.DeadlockFailures != 0 {
			t.Errorf("--max-tries 1: %d serialization failures, %d retried, %d deadlocks; want some, 0, 0",
				once.SerializationFailures, once.Retried, once.DeadlockFailures)
		}

		cfg.MaxTries = 10
		retried := runOK(t, mode, cfg).Totals.Total
		if retried.Retried == 0 || retried.Retries < retried.Retried {
			t.Errorf("--max-tries 10: Retried = %d, Retries = %d; want Retried > 0 and Retries >= Retried", retried.Retried, retried.Retries)
		}
		if failureRatio(&retried) > failureRatio(&once)/4 {
			t.Errorf("failed share of transactions %.3f with 10 tries, %.3f with 1: want far fewer with retries",
				failureRatio(&retried), failureRatio(&once))
		}
		t.Logf("1 try: %d ok, %d failed; 10 tries: %d ok, %d failed, %d retried, %d retries",
			once.Count, once.Failures(), retried.Count, retried.Failures(), retried.Retried, retried.Retries)
	})
}

func TestDeadlocksAreCountedNotAborted(t *testing.T) {
	pg := admin(t)
	setup(t, pg, "CREATE TABLE dl (id int PRIMARY KEY); INSERT INTO dl VALUES (1), (2)", "DROP TABLE dl")
	// Two scripts lock the same two rows in opposite orders.
	lockBoth := func(first, second int) string {
		return fmt.Sprintf(`BEGIN;
SELECT id FROM dl WHERE id = %d FOR UPDATE;
SELECT pg_sleep(0.01);
SELECT id FROM dl WHERE id = %d FOR UPDATE;
END;
`, first, second)
	}
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		cfg := newConfig(t, "ab.sql", lockBoth(1, 2), "ba.sql", lockBoth(2, 1))
		cfg.Clients, cfg.Duration = 4, time.Second
		res := runOK(t, mode, cfg)
		tot := res.Totals.Total
		if tot.DeadlockFailures == 0 || tot.SerializationFailures != 0 {
			t.Errorf("%d deadlock and %d serialization failures, want some deadlocks only", tot.DeadlockFailures, tot.SerializationFailures)
		}
		// Each failure is charged to the command that hit it: one of the
		// FOR UPDATEs (a client queued behind another for the first lock
		// can be part of the cycle too, through the tuple lock).
		var atLocks int64
		for _, s := range res.Totals.Scripts {
			atLocks += s.Commands[1].Failures + s.Commands[3].Failures
		}
		if atLocks != tot.DeadlockFailures {
			t.Errorf("%d failures recorded at the FOR UPDATEs, want all %d", atLocks, tot.DeadlockFailures)
		}
		if tot.Count == 0 {
			t.Error("no transaction succeeded: clients did not go on after a deadlock")
		}
	})
}

func TestErrorsAfterTheDurationStillCount(t *testing.T) {
	pg := admin(t)
	setup(t, pg, `CREATE FUNCTION fail_always() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'always fails' USING ERRCODE = '40001';
END $$`, "DROP FUNCTION fail_always()")
	// The only transaction is still running when -T ends, and fails
	// then: pgbench counts the failure (without retrying it) or aborts
	// the client, as it would before the end. Only a command the run
	// itself cancelled goes unrecorded.
	tests := []struct {
		name        string
		failingSQL  string
		failures    int64
		abortedWith string // "" = not aborted
	}{
		// A serialization failure is counted as a failed transaction.
		{"serialization failure", "SELECT fail_always();", 1, ""},
		// Any other error aborts the client, as during the run.
		{"sql error", "SELECT 1 / 0;", 0, "division by zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := newConfig(t, "late.sql", "SELECT pg_sleep(1.3);\n"+tt.failingSQL+"\n")
			cfg.Clients, cfg.Duration, cfg.MaxTries = 1, time.Second, 3
			res, stderr, err := run(t, context.Background(), pgtarget.Extended, cfg)
			if tt.abortedWith != "" {
				if !errors.Is(err, engine.ErrAborted) || !strings.Contains(stderr, tt.abortedWith) {
					t.Errorf("Run error = %v, stderr %q; want ErrAborted and a message with %q", err, stderr, tt.abortedWith)
				}
			} else if err != nil {
				t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
			}
			tot := res.Totals.Total
			if tot.SerializationFailures != tt.failures || tot.Retried != 0 || tot.Count != 0 {
				t.Errorf("SerializationFailures = %d, Retried = %d, Count = %d; want %d, 0 (no retry after the end), 0",
					tot.SerializationFailures, tot.Retried, tot.Count, tt.failures)
			}
		})
	}
}

func TestRateOpenModel(t *testing.T) {
	t.Run("schedule", func(t *testing.T) {
		const rate, seconds = 500, 3
		var rec txRecorder
		cfg := newConfig(t, "select-only", "builtin:select-only")
		cfg.Clients, cfg.Duration, cfg.Rate, cfg.MaxTries, cfg.Log = 4, seconds*time.Second, rate, 1, &rec
		res := runOK(t, pgtarget.Simple, cfg)
		tot := res.Totals.Total
		// pgbench's accuracy is 1 %; a shared test machine gets 15 %.
		if want := float64(rate * seconds); float64(tot.Count) < 0.85*want || float64(tot.Count) > 1.15*want {
			t.Errorf("Count = %d, want %v ± 15 %%", tot.Count, want)
		}
		if tot.Lag.Count != tot.Count {
			t.Errorf("Lag.Count = %d, want one lag per transaction (%d)", tot.Lag.Count, tot.Count)
		}
		if int64(len(rec.txs)) != tot.Count {
			t.Errorf("%d transactions logged, want %d", len(rec.txs), tot.Count)
		}
		// Latency is measured from the scheduled start, so it includes
		// the lag (coordinated omission corrected).
		for _, tx := range rec.txs {
			if tx.LatencyUS < tx.LagUS || tx.LagUS < 0 {
				t.Fatalf("client %d tx %d: latency %d µs, lag %d µs: want 0 <= lag <= latency", tx.Client, tx.TxNo, tx.LatencyUS, tx.LagUS)
			}
		}
	})
	t.Run("latency limit skips", func(t *testing.T) {
		// Far more than one client can do: slots fall behind by more than
		// the limit and are skipped without running, as pgbench does.
		cfg := newConfig(t, "select-only", "builtin:select-only")
		cfg.Clients, cfg.Duration, cfg.Rate, cfg.LatencyLimit = 1, time.Second, 100000, time.Millisecond
		res := runOK(t, pgtarget.Simple, cfg)
		tot := res.Totals.Total
		if tot.Skipped == 0 || tot.Count == 0 {
			t.Errorf("Skipped = %d, Count = %d, want both > 0", tot.Skipped, tot.Count)
		}
	})
}

func TestInterruptLeavesNothingBehind(t *testing.T) {
	pg := admin(t)
	const src = `BEGIN;
SELECT pg_sleep(30);
END;
`
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		cfg := newConfig(t, "sleep.sql", src)
		cfg.Clients, cfg.Duration = 2, time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := start(t, ctx, mode, cfg)
		sleeping := waitFor(10*time.Second, func() bool {
			return queryInt(t, pg, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"+appName+"' AND query LIKE '%pg_sleep%' AND state = 'active'") == 2
		})
		if !sleeping {
			t.Fatal("the two clients never started sleeping")
		}
		cancel()
		cancelled := time.Now()
		var out outcome
		select {
		case out = <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("Run did not return within 15 s of the cancellation")
		}
		if took := time.Since(cancelled); took > 6*time.Second {
			t.Errorf("Run returned %v after the cancellation, want within 6 s", took)
		}
		if out.err != nil {
			t.Fatalf("Run: %v\nstderr:\n%s", out.err, out.stderr)
		}
		if !out.res.Interrupted || out.res.AbortedClient != 0 {
			t.Errorf("Interrupted = %v, AbortedClient = %d, want true, 0", out.res.Interrupted, out.res.AbortedClient)
		}
		// The cancelled transactions are neither successes nor failures.
		if tot := out.res.Totals.Total; tot.Total() != 0 {
			t.Errorf("%d transactions recorded, want 0", tot.Total())
		}
		if !waitFor(5*time.Second, func() bool { return sessions(t, pg) == 0 }) {
			t.Errorf("sessions left behind: %v", queryRows(t, pg,
				"SELECT pid, state, xact_start, query FROM pg_stat_activity WHERE application_name = '"+appName+"'"))
		}
	})
}

func TestLostConnectionsAbortClients(t *testing.T) {
	pg := admin(t)
	const clients = 4
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		cfg := newConfig(t, "select-only", "builtin:select-only")
		cfg.Clients, cfg.Duration = clients, 5*time.Second
		done := start(t, context.Background(), mode, cfg)
		if !waitFor(5*time.Second, func() bool { return sessions(t, pg) == clients }) {
			t.Fatalf("%d sessions, never %d", sessions(t, pg), clients)
		}
		killed := queryInt(t, pg, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '"+appName+"') AS t")
		terminated := time.Now()
		if killed != clients {
			t.Errorf("terminated %d backends, want %d", killed, clients)
		}
		var out outcome
		select {
		case out = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run hung after its connections were terminated")
		}
		if took := time.Since(terminated); took > 2*time.Second {
			t.Errorf("Run returned %v after the connections were lost, want promptly", took)
		}
		if !errors.Is(out.err, engine.ErrAborted) {
			t.Fatalf("Run error = %v, want ErrAborted", out.err)
		}
		if out.res.AbortedClient != clients {
			t.Errorf("AbortedClient = %d, want %d", out.res.AbortedClient, clients)
		}
		lines := strings.Split(strings.TrimSpace(out.stderr), "\n")
		if len(lines) != clients {
			t.Fatalf("stderr has %d lines, want one abort per client:\n%s", len(lines), out.stderr)
		}
		for _, line := range lines {
			// "client N script 0 aborted in command 1 query 0: <error>"
			_, reason, _ := strings.Cut(line, ": ")
			if !strings.Contains(line, "aborted") || strings.TrimSpace(reason) == "" {
				t.Errorf("abort line %q does not say why", line)
			}
		}
		t.Logf("abort messages:\n%s", out.stderr)
	})
}

func TestDebugOutputFromManyClients(t *testing.T) {
	// debug() prints from every client to the one Stderr: whole lines,
	// no data race on the writer.
	cfg := newConfig(t, "debug.sql", "\\set x debug(:client_id * 10)\nSELECT :x;\n")
	cfg.Clients, cfg.Transactions = 4, 50
	res, stderr, err := run(t, context.Background(), pgtarget.Extended, cfg)
	if err != nil {
		t.Fatalf("Run: %v\nstderr:\n%s", err, stderr)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		counts[line]++
	}
	for client := range 4 {
		line := fmt.Sprintf("debug(script=0,command=1): int %d", client*10)
		if counts[line] != 50 {
			t.Errorf("%q printed %d times, want 50", line, counts[line])
		}
	}
	if len(counts) != 4 || res.Totals.Total.Count != 200 {
		t.Errorf("%d distinct lines, %d transactions; want 4, 200:\n%s", len(counts), res.Totals.Total.Count, stderr)
	}
}

func TestConnectionRefused(t *testing.T) {
	// A port nothing listens on: bind one, note it, release it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	host, port, _ := net.SplitHostPort(addr)
	target, err := pgtarget.NewTarget(fmt.Sprintf("host=%s port=%s user=nobody dbname=nothing sslmode=disable connect_timeout=5", host, port), pgtarget.Simple, appName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t, "select-only", "builtin:select-only")
	cfg.Clients, cfg.Transactions = 2, 1
	start := time.Now()
	res, err := engine.Run(context.Background(), target, cfg)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("Run error = %v, want one naming %s", err, addr)
	}
	if res != nil {
		t.Errorf("Run returned results %+v for a run that never connected", res)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a refused connection took %v to report", took)
	}
}

func TestConnectPerTransaction(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		cfg := newConfig(t, "select-only", "builtin:select-only")
		cfg.Clients, cfg.Transactions, cfg.Connect = 2, 10, true
		res := runOK(t, mode, cfg)
		if res.Totals.Total.Count != 20 || res.Connections != 20 {
			t.Errorf("Count = %d, Connections = %d, want 20 of each (-C connects once per transaction)",
				res.Totals.Total.Count, res.Connections)
		}
	})
}

func TestTransactionLog(t *testing.T) {
	var buf bytes.Buffer
	log := engine.NewPgbenchLog(&buf, engine.PgbenchLogOptions{})
	cfg := newConfig(t, "select-only", "builtin:select-only")
	cfg.Clients, cfg.Transactions, cfg.Log = 2, 25, log
	runOK(t, pgtarget.Extended, cfg)
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d log lines, want 50 (one per transaction)", len(lines))
	}
	// Each client numbers its transactions 1, 2, … without gaps.
	seen := map[string]bool{}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 6 {
			t.Fatalf("log line %q has %d columns, want 6", line, len(f))
		}
		if _, err := strconv.ParseInt(f[2], 10, 64); err != nil {
			t.Errorf("log line %q: latency %q is not a number", line, f[2])
		}
		seen[f[0]+" "+f[1]] = true
	}
	for client := range 2 {
		for tx := 1; tx <= 25; tx++ {
			if key := fmt.Sprintf("%d %d", client, tx); !seen[key] {
				t.Errorf("no log line for client %d transaction %d", client, tx)
			}
		}
	}
}

// BenchmarkSelectOnlyTx runs the select-only builtin through one session,
// as one engine client does, to count what each transaction allocates in
// our code and pgconn's.
func BenchmarkSelectOnlyTx(b *testing.B) {
	for _, mode := range modes {
		b.Run(mode.String(), func(b *testing.B) {
			ctx := context.Background()
			syms := script.NewSymbols()
			sc, err := script.Builtin("select-only", syms)
			if err != nil {
				b.Fatal(err)
			}
			vars := script.NewVars(syms)
			vars.SetInt(syms.Ref(script.VarScale), 1)
			env := script.Env{Vars: vars, Rand: script.NewRand(1)}
			conn, err := newTarget(b, mode).Connect(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			tx := func() {
				for _, cmd := range sc.Commands {
					if cmd.Kind == script.KindSet {
						v, err := cmd.Expr.Eval(&env)
						if err != nil {
							b.Fatal(err)
						}
						vars.SetValue(cmd.Var, v)
						continue
					}
					if err := conn.Exec(ctx, cmd, vars); err != nil {
						b.Fatal(err)
					}
				}
			}
			tx() // prepares the statement in prepared mode
			b.ReportAllocs()
			for b.Loop() {
				tx()
			}
		})
	}
}

// A command that ignores the cancel request (it catches query_canceled)
// must not hang the run: after the grace period the client is woken with
// an error and its session closed.
func TestHardStopOfACommandThatIgnoresCancel(t *testing.T) {
	pg := admin(t)
	const src = `DO $$ BEGIN LOOP BEGIN PERFORM pg_sleep(30); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $$;
`
	forEachMode(t, func(t *testing.T, mode pgtarget.QueryMode) {
		t.Cleanup(func() {
			sqlExec(t, pg, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '"+appName+"'")
			waitFor(5*time.Second, func() bool { return sessions(t, pg) == 0 })
		})
		cfg := newConfig(t, "stubborn.sql", src)
		cfg.Clients, cfg.Duration, cfg.StopGrace = 2, time.Minute, 200*time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := start(t, ctx, mode, cfg)
		if !waitFor(10*time.Second, func() bool {
			return queryInt(t, pg, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '"+appName+"' AND query LIKE 'DO %' AND state = 'active'") == 2
		}) {
			t.Fatal("the two clients never started")
		}
		cancel()
		cancelled := time.Now()
		select {
		case out := <-done:
			if took := time.Since(cancelled); took > 8*time.Second {
				t.Errorf("Run returned %v after the cancellation, want within 8 s", took)
			}
			if out.res == nil || !out.res.Interrupted {
				t.Errorf("Run: %+v, %v; want an interrupted result", out.res, out.err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return within 20 s of the cancellation")
		}
	})
}

// A session the server ends while its client sleeps must not make the
// event loop spin: the socket reports a hang-up (level-triggered, even
// when watched for nothing) until the client wakes and reads it. The
// process's CPU time over a second of the sleep says whether it spun (290
// ms with the bug, on a busy machine) or waited (7 ms); CPU time, unlike
// wall time, does not grow with how busy the machine is.
func TestHungUpSessionWhileSleepingDoesNotSpin(t *testing.T) {
	pg := admin(t)
	cfg := newConfig(t, "sleepy.sql", "SELECT 1;\n\\sleep 4 s\nSELECT 1;\n")
	cfg.Clients, cfg.Duration, cfg.ContinueOnError = 1, 6*time.Second, true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := start(t, ctx, pgtarget.Simple, cfg)
	if !waitFor(5*time.Second, func() bool { return sessions(t, pg) == 1 }) {
		t.Fatal("the client never connected")
	}
	time.Sleep(300 * time.Millisecond) // past its first SELECT, into the sleep
	sqlExec(t, pg, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '"+appName+"'")
	time.Sleep(200 * time.Millisecond)
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0 := cpu()
	time.Sleep(time.Second)
	used := cpu() - c0
	t.Logf("CPU over 1 s of the sleep: %v; sessions now %d", used, sessions(t, pg))
	if used > 100*time.Millisecond {
		t.Errorf("%v of CPU during 1 s of a sleep after the session was ended: the event loop spins", used)
	}
	cancel()
	<-done
}
