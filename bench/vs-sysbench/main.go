// Command vs-sysbench measures firedrill's MariaDB client (the engine with
// db/mariadb/client) against sysbench on one throwaway MariaDB: sysbench's
// oltp_point_select and oltp_read_write, and firedrill scripts of the same
// statements, 8 clients, same duration, run alternately (pairs), printing
// each side's TPS, the median ratio firedrill/sysbench and each client
// process's CPU time per transaction (its rusage, as bench/vs-pgbench).
//
// sysbench prepares its statements on the server (--db-ps-mode=auto), so
// it is compared with firedrill's prepared mode; with -modes simple also
// sysbench --db-ps-mode=disable against firedrill's simple mode.
//
//	go run ./bench/vs-sysbench [-pairs 3] [-seconds 10] [-threads 1,2] [-cases point_select,read_write] [-modes prepared,simple] [-goroutines]
//
// The firedrill side runs in a child process of this same binary (-client),
// so that its CPU time is its own.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/bench/internal/benchkit"
	mdbtarget "github.com/firedrill/firedrill/db/mariadb/client"
	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/db/mariadb/mdbdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

const tableSize = 10000

// pointSelect is oltp_point_select's transaction: one point select.
const pointSelect = `\set id random(1, 10000)
SELECT c FROM sbtest1 WHERE id=:id;
`

// readWrite is oltp_read_write's transaction, statement for statement
// (the c and pad values are fixed strings of sysbench's lengths rather
// than random digits).
var readWrite = func() string {
	var b strings.Builder
	b.WriteString("BEGIN;\n")
	for range 10 {
		b.WriteString("\\set id random(1, 10000)\nSELECT c FROM sbtest1 WHERE id=:id;\n")
	}
	for _, q := range []string{
		"SELECT c FROM sbtest1 WHERE id BETWEEN :id AND :id2;",
		"SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN :id AND :id2;",
		"SELECT c FROM sbtest1 WHERE id BETWEEN :id AND :id2 ORDER BY c;",
		"SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN :id AND :id2 ORDER BY c;",
	} {
		b.WriteString("\\set id random(1, 10000)\n\\set id2 :id + 99\n" + q + "\n")
	}
	c := strings.Repeat("12345678901-", 10)[:119]
	pad := strings.Repeat("12345678901-", 5)[:59]
	b.WriteString("\\set id random(1, 10000)\nUPDATE sbtest1 SET k=k+1 WHERE id=:id;\n")
	b.WriteString("\\set id random(1, 10000)\nUPDATE sbtest1 SET c='" + c + "' WHERE id=:id;\n")
	b.WriteString("\\set id random(1, 10000)\n\\set k random(1, 10000)\nDELETE FROM sbtest1 WHERE id=:id;\n")
	b.WriteString("INSERT INTO sbtest1 (id, k, c, pad) VALUES (:id, :k, '" + c + "', '" + pad + "');\n")
	b.WriteString("COMMIT;\n")
	return b.String()
}()

var cases = map[string]struct {
	sysbench string // sysbench's test
	script   string
}{
	"point_select": {"oltp_point_select", pointSelect},
	"read_write":   {"oltp_read_write", readWrite},
}

func main() {
	client := flag.Bool("client", false, "internal: run the firedrill side and print its counts")
	addr := flag.String("addr", "", "internal (-client): server address")
	user := flag.String("user", "", "internal (-client): user")
	db := flag.String("db", "", "internal (-client): database")
	caseName := flag.String("case", "", "internal (-client): case")
	mode := flag.String("mode", "prepared", "internal (-client): protocol mode")
	goroutines := flag.Bool("goroutines", false, "firedrill clients on goroutines of their own (blocking in poll(2), a thread each, as sysbench's) instead of event loops")
	cpuProfile := flag.String("cpuprofile", "", "with -client: write a CPU profile of the firedrill side to this file")
	pairs := flag.Int("pairs", 3, "sysbench/firedrill pairs per case")
	seconds := flag.Int("seconds", 10, "duration of each run")
	clients := flag.Int("clients", 8, "clients (sysbench --threads)")
	threadList := flag.String("threads", "1,2", "comma-separated firedrill event loops (-j): each case runs at every one")
	caseList := flag.String("cases", "point_select,read_write", "cases to run")
	modeList := flag.String("modes", "prepared", "firedrill modes to compare (prepared vs sysbench's prepared statements, simple vs --db-ps-mode=disable)")
	flag.Parse()
	var err error
	if *client && *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "vs-sysbench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "vs-sysbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *client {
		// The password comes through the environment, never argv.
		err = runClient(*addr, *user, os.Getenv("VS_SYSBENCH_PASSWORD"), *db, *caseName, *mode, *clients, *seconds, mustThreads(*threadList)[0], *goroutines)
	} else {
		err = run(*pairs, *seconds, *clients, mustThreads(*threadList), strings.Split(*caseList, ","), strings.Split(*modeList, ","), *goroutines)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "vs-sysbench:", err)
		os.Exit(1)
	}
}

func mustThreads(list string) []int {
	threads, err := benchkit.Threads(list)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vs-sysbench:", err)
		os.Exit(2)
	}
	return threads
}

// runClient is the firedrill side: the engine with db/mariadb/client, as a
// workload runs it, printing what measure reads.
func runClient(addr, user, password, db, caseName, mode string, clients, seconds, threads int, goroutines bool) error {
	c, ok := cases[caseName]
	if !ok {
		return fmt.Errorf("unknown case %q", caseName)
	}
	syms := script.NewSymbols()
	s, err := script.ParseDialect(caseName+".sql", []byte(c.script), syms, mdbdialect.Script())
	if err != nil {
		return err
	}
	target, err := mdbtarget.NewTarget(mdbtarget.Config{Addr: addr, User: user, Password: password, Database: db, Mode: mode, AppName: "vs-sysbench"})
	if err != nil {
		return err
	}
	res, err := engine.Run(context.Background(), target, engine.Config{
		Scripts: []*script.Script{s}, Symbols: syms, Clients: clients, Threads: threads, Goroutines: goroutines,
		Duration: time.Duration(seconds) * time.Second, MaxTries: 100, ContinueOnError: true,
		RandomSeed: uint64(time.Now().UnixNano()),
	})
	if err != nil {
		return err
	}
	n := res.Totals.Total.Count
	fmt.Printf("transactions: %d\ntps = %f\nfailed: %d\n", n, float64(n)/res.Elapsed.Seconds(), res.Totals.Total.Failures())
	return nil
}

func run(pairs, seconds, clients int, threads []int, caseNames, modes []string, goroutines bool) error {
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	inst, err := mdbinstance.Start(ctx, mdbinstance.Options{Settings: map[string]string{
		"max_connections": "200", "skip_log_bin": "",
	}, Progress: os.Stderr})
	if err != nil {
		return err
	}
	defer inst.Stop()
	host, port := "127.0.0.1", strconv.Itoa(inst.Port())
	sbConn := []string{"--mysql-host=" + host, "--mysql-port=" + port, "--mysql-user=" + inst.User(),
		"--mysql-password=" + inst.Password(), "--mysql-db=" + inst.Database(), "--tables=1",
		"--table-size=" + strconv.Itoa(tableSize), "--rand-type=uniform", "--mysql-ignore-errors=1213,1205,1062,1020"}
	if out, err := exec.Command("sysbench", append([]string{"oltp_point_select"}, append(sbConn, "prepare")...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("sysbench prepare: %v\n%s", err, out)
	}
	fmt.Printf("server: MariaDB %s (embedded), sbtest1 of %d rows, %d clients, %d s per run, %d pairs; machine: %d CPUs, load average %s\n\n",
		inst.Version(), tableSize, clients, seconds, pairs, benchkit.NumCPU(), loadAvg())
	for _, name := range caseNames {
		c, ok := cases[name]
		if !ok {
			return fmt.Errorf("unknown case %q", name)
		}
		for _, mode := range modes {
			psMode := "auto"
			if mode == "simple" {
				psMode = "disable"
			}
			sbArgs := append([]string{c.sysbench}, sbConn...)
			sbArgs = append(sbArgs, "--threads="+strconv.Itoa(clients), "--time="+strconv.Itoa(seconds),
				"--db-ps-mode="+psMode, "--report-interval=0", "run")
			for _, j := range threads {
				fdArgs := []string{"-client", "-addr", host + ":" + port, "-user", inst.User(), "-db", inst.Database(),
					"-case", name, "-mode", mode, "-clients", strconv.Itoa(clients), "-seconds", strconv.Itoa(seconds),
					"-threads", strconv.Itoa(j)}
				if goroutines {
					fdArgs = append(fdArgs, "-goroutines")
				}
				how := "-j " + strconv.Itoa(j)
				if goroutines {
					how = "on goroutines"
				}
				fmt.Printf("%s, firedrill %s %s vs sysbench %s --db-ps-mode=%s:\n", name, mode, how, c.sysbench, psMode)
				err := versusSysbench.RunPairs(os.Stdout, pairs, ">= 0.95",
					func() (benchkit.Measure, error) {
						return measure("sysbench", sbArgs, nil, sbTxRe, sbTPSRe)
					},
					func() (benchkit.Measure, error) {
						return measure(self, fdArgs, []string{"VS_SYSBENCH_PASSWORD=" + inst.Password()}, fdTxRe, fdTPSRe)
					})
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// versusSysbench is how a pair of runs is printed.
var versusSysbench = benchkit.Comparison{Tool: "sysbench", Rate: "tps", RateVerb: "%9.1f", CPUVerb: "%.1f", Unit: "tx", UnitName: "tx"}

var (
	sbTxRe  = regexp.MustCompile(`(?m)^\s*transactions:\s+([0-9]+)`)
	sbTPSRe = regexp.MustCompile(`(?m)^\s*transactions:\s+[0-9]+\s+\(([0-9.]+) per sec`)
	fdTxRe  = regexp.MustCompile(`(?m)^transactions: ([0-9]+)`)
	fdTPSRe = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)
)

// measure runs one side and reads its transactions and rate from its
// output, and its client CPU per transaction from its rusage.
func measure(bin string, args, env []string, txRe, tpsRe *regexp.Regexp) (benchkit.Measure, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return benchkit.Measure{}, fmt.Errorf("%s: %v\n%s", bin, err, out.String())
	}
	t, n := tpsRe.FindStringSubmatch(out.String()), txRe.FindStringSubmatch(out.String())
	if t == nil || n == nil {
		return benchkit.Measure{}, fmt.Errorf("%s: no transactions in its output:\n%s", bin, out.String())
	}
	var m benchkit.Measure
	m.Rate, _ = strconv.ParseFloat(t[1], 64)
	tx, _ := strconv.ParseFloat(n[1], 64)
	if cpu, _, ok := benchkit.Usage(cmd); ok && tx > 0 {
		m.CPUPerUnit = cpu / tx
		m.WaitsPerUnit = float64(benchkit.Waits(cmd)) / tx
	}
	return m, nil
}

// loadAvg is the machine's three load averages, or "?".
func loadAvg() string {
	if load := benchkit.LoadAverage(3); load != "" {
		return load
	}
	return "?"
}
