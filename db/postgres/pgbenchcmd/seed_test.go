package pgbenchcmd_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/internal/cli"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
)

// seedDiffScript draws every random function of pgbench 15 once or more
// per transaction and stores the values with the client and its
// transaction number (:n, counted by the client from -D n=0), so that the
// real pgbench and firedrill pgbench can be compared value by value. The
// ranges exercise the rejection loops: a span just under 2^63, a span of
// 7 (bitmask rejection), random_gaussian at its minimum parameter 2 and
// random_zipfian with s close to 1.
const seedDiffScript = `\set n :n + 1
\set r1 random(1, 1000000)
\set r2 random(-4611686018427387904, 4611686018427387902)
\set r3 random(0, 6)
\set r4 random(-5, 5)
\set e1 random_exponential(1, 1000, 2.5)
\set e2 random_exponential(-50, 50, 0.1)
\set g1 random_gaussian(1, 1000, 2.0)
\set g2 random_gaussian(1, 100000, 5.5)
\set z1 random_zipfian(1, 1000, 1.07)
\set z2 random_zipfian(1, 100000, 2.5)
\set z3 random_zipfian(1, 10, 1.001)
\set p1 permute(:r1, 1000)
\set p2 permute(:r1, 1000000, 12345)
\set p3 permute(:r2, 9223372036854775807, :r3)
\set p4 permute(:r4, 7, :random_seed)
\set h1 hash(:r1)
\set h2 hash_fnv1a(:r2)
\set h3 hash_murmur2(:r3)
\set h4 hash(:r1, :r2)
\set h5 hash_fnv1a(:z1, :default_seed)
INSERT INTO prng_diff VALUES (:kind, :client_id, :n, :default_seed, :random_seed, :r1, :r2, :r3, :r4, :e1, :e2, :g1, :g2, :z1, :z2, :z3, :p1, :p2, :p3, :p4, :h1, :h2, :h3, :h4, :h5);
`

const seedDiffColumns = "kind, cid, n, default_seed, random_seed, r1, r2, r3, r4, e1, e2, g1, g2, z1, z2, z3, p1, p2, p3, p4, h1, h2, h3, h4, h5"

// TestPgbenchSameRandomValues runs the real pgbench and firedrill pgbench
// with the same --random-seed, -c and -j on one script that draws every
// random function, and compares the values per client and transaction:
// pgbench 15's seeding (per-client generators, :default_seed, the
// threads' script choosers) and its algorithms must be reproduced
// exactly.
func TestPgbenchSameRandomValues(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("differential test against pgbench skipped in -short mode")
	}
	ctx, inst, pgbench := diffServer(t, 4*time.Minute)
	db, err := pgconn.Connect(ctx, inst.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	cols := strings.Split(seedDiffColumns, ", ")
	if _, err := db.Exec(ctx, "CREATE TABLE prng_diff ("+strings.Join(cols, " bigint, ")+" bigint)").ReadAll(); err != nil {
		t.Fatal(err)
	}

	if _, err := db.Exec(ctx, "CREATE TABLE prng_gen (cid bigint, n bigint, i bigint, v bigint)").ReadAll(); err != nil {
		t.Fatal(err)
	}
	generated, calls := seedDiffGenerated(rand.New(rand.NewPCG(13, 15)), 60)

	dir := t.TempDir()
	write := func(name, kind string) string {
		p := filepath.Join(dir, name)
		body := strings.Replace(seedDiffScript, ":kind", kind, 1) + generated
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.sql", "0")
	// Two scripts with weights: which one each transaction runs comes from
	// the thread's chooser; with one client per thread that order is
	// deterministic in pgbench too.
	a, b := write("a.sql", "1"), write("b.sql", "2")
	conn := []string{"-h", inst.Host(), "-p", strconv.Itoa(inst.Port()), "-U", inst.User()}

	type run struct {
		seed string
		args []string
	}
	var runs []run
	for _, seed := range []string{"0", "42", "18446744073709551615"} {
		runs = append(runs,
			run{seed, []string{"-c", "3", "-j", "1", "-f", one}},
			run{seed, []string{"-c", "4", "-j", "2", "-f", one}},
		)
	}
	runs = append(runs,
		run{"7", []string{"-c", "1", "-j", "1", "-f", one}},
		run{"-1", []string{"-c", "5", "-j", "2", "-f", one, "-D", "default_seed=99"}},
		run{"1234567", []string{"-c", "2", "-j", "2", "-f", a + "@1", "-f", b + "@3"}},
		run{"31337", []string{"-c", "3", "-j", "3", "-f", a + "@2", "-f", b + "@5"}},
	)
	const txs = 25
	libmValues, libmOff := 0, 0
	for _, r := range runs {
		args := append([]string{"-n", "-t", strconv.Itoa(txs), "--random-seed", r.seed, "-D", "n=0"}, r.args...)
		args = append(append(args, conn...), inst.Database())
		name := fmt.Sprintf("seed=%s %s", r.seed, strings.Join(r.args, " "))
		name = strings.ReplaceAll(name, dir+"/", "")

		truncate(t, ctx, db)
		cmd := exec.CommandContext(ctx, pgbench, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: pgbench: %v\n%s", name, err, out)
		}
		want := rows(t, ctx, db)
		wantGen := genRows(t, ctx, db)

		truncate(t, ctx, db)
		env, out, errb := clikit.MemoryEnv("")
		if code := cli.Main(env, kinds.Registry(), append([]string{"pgbench"}, args...)); code != 0 {
			t.Fatalf("%s: firedrill pgbench: exit %d\n%s\n%s", name, code, out, errb)
		}
		got := rows(t, ctx, db)
		gotGen := genRows(t, ctx, db)

		clients, _ := strconv.Atoi(r.args[1])
		if len(want) != clients*txs {
			t.Fatalf("%s: pgbench stored %d rows, want %d", name, len(want), clients*txs)
		}
		if len(got) != len(want) {
			t.Errorf("%s: firedrill stored %d rows, pgbench %d", name, len(got), len(want))
			continue
		}
		if len(wantGen) != clients*txs*len(calls) {
			t.Errorf("%s: pgbench stored %d generated values, want %d", name, len(wantGen), clients*txs*len(calls))
		}
		l, o := compareGenerated(t, name, calls, gotGen, wantGen)
		libmValues += l
		libmOff += o
		bad := 0
		for i := range want {
			for j := range want[i] {
				if want[i][j] != got[i][j] && bad < 10 {
					bad++
					t.Errorf("%s: client %s transaction %s: %s = %s, pgbench %s", name, want[i][1], want[i][2], cols[j], got[i][j], want[i][j])
				}
			}
		}
	}
	t.Logf("%d runs, %d generated calls per transaction: %d values over spans above 2^40 through libm, %d of them off in the last bits", len(runs), len(calls), libmValues, libmOff)
}

// genCall is one generated random-function call.
type genCall struct {
	src string
	// libm: the value passes through log/exp/pow/sin over a span above
	// 2^40, where glibc's few results that are not correctly rounded
	// (about 0.1 % of arguments) show in the integer: such a value may
	// differ from pgbench's by a few units in its last place (span·2^-50).
	libm bool
	span float64
}

// seedDiffGenerated returns script lines that set n variables by random
// functions with generated bounds and parameters (spans from 0 to 2^62,
// every documented parameter range) and permute/hash of them, and an
// INSERT of the values into prng_gen.
func seedDiffGenerated(g *rand.Rand, n int) (string, []genCall) {
	pick := func(xs ...string) string { return xs[g.IntN(len(xs))] }
	var b strings.Builder
	var calls []genCall
	for i := range n {
		lo := g.Int64N(1<<62) - 1<<61
		span := []int64{0, 1, 2, 3, 7, 8, 100, 1000, 65535, 1 << 32, 1<<40 + 7, 1 << 62}[g.IntN(12)]
		if g.IntN(3) == 0 {
			lo = g.Int64N(21) - 10
		}
		hi := lo + span
		c := genCall{span: float64(span)}
		switch g.IntN(8) {
		case 0:
			c.src = fmt.Sprintf("random(%d, %d)", lo, hi)
		case 1:
			c.src = fmt.Sprintf("random_exponential(%d, %d, %s)", lo, hi, pick("0.0001", "0.5", "1", "3.7", "10", "50.5", "700"))
			c.libm = span > 1<<40
		case 2:
			c.src = fmt.Sprintf("random_gaussian(%d, %d, %s)", lo, hi, pick("2", "2.0001", "2.5", "3", "7.25", "20"))
			c.libm = span > 1<<40
		case 3:
			c.src = fmt.Sprintf("random_zipfian(%d, %d, %s)", lo, hi, pick("1.001", "1.01", "1.5", "2", "5", "100", "1000"))
			c.libm = span > 1<<40
		case 4:
			c.src = fmt.Sprintf("permute(random(%d, %d), %s)", lo, hi, pick("1", "2", "10", "1000", "123457", "9223372036854775807"))
		case 5:
			c.src = fmt.Sprintf("permute(random(%d, %d), %s, random(-1000, 1000))", lo, hi, pick("3", "1000", "4294967296"))
		case 6:
			c.src = fmt.Sprintf("%s(random(%d, %d))", pick("hash", "hash_fnv1a", "hash_murmur2"), lo, hi)
		default:
			c.src = fmt.Sprintf("random(%d, %d) + random_zipfian(1, 5, 1.5) * random_gaussian(-3, 3, 2.0)", lo, hi)
		}
		calls = append(calls, c)
		fmt.Fprintf(&b, "\\set g%d %s\n", i, c.src)
	}
	b.WriteString("INSERT INTO prng_gen VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(:client_id, :n, %d, :g%d)", i, i)
	}
	b.WriteString(";\n")
	return b.String(), calls
}

type genRow struct {
	cid, n, i int
	v         int64
}

// genRows returns prng_gen in client, transaction, call order.
func genRows(t *testing.T, ctx context.Context, db *pgconn.PgConn) []genRow {
	t.Helper()
	res := db.ExecParams(ctx, "SELECT cid, n, i, v FROM prng_gen ORDER BY cid, n, i", nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	out := make([]genRow, len(res.Rows))
	for k, row := range res.Rows {
		var err error
		r := &out[k]
		for j, dst := range []*int{&r.cid, &r.n, &r.i} {
			if *dst, err = strconv.Atoi(string(row[j])); err != nil {
				t.Fatal(err)
			}
		}
		if r.v, err = strconv.ParseInt(string(row[3]), 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// compareGenerated checks the generated calls' values: equal, except
// (see genCall.libm) values differing by at most span·2^-50 in at most
// 1 % of the libm calls. It returns how many libm values differed and how
// many there were.
func compareGenerated(t *testing.T, name string, calls []genCall, got, want []genRow) (int, int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: generated calls: firedrill stored %d values, pgbench %d", name, len(got), len(want))
		return 0, 0
	}
	libm, off := 0, 0
	for k := range want {
		w, g := want[k], got[k]
		if g.cid != w.cid || g.n != w.n || g.i != w.i {
			t.Fatalf("%s: generated calls: rows out of step: %+v vs %+v", name, g, w)
		}
		c := calls[w.i]
		if c.libm {
			libm++
		}
		if g.v == w.v {
			continue
		}
		if diff := math.Abs(float64(g.v) - float64(w.v)); c.libm && diff <= c.span*0x1p-50 {
			off++
			t.Logf("%s: client %d transaction %d: %s = %d, pgbench %d (glibc not correctly rounded)", name, w.cid, w.n, c.src, g.v, w.v)
			continue
		}
		t.Errorf("%s: client %d transaction %d: %s = %d, pgbench %d", name, w.cid, w.n, c.src, g.v, w.v)
		return libm, off
	}
	if off*100 > libm {
		t.Errorf("%s: %d of %d values over huge spans differ in their last bits, more than 1 %%", name, off, libm)
	}
	return libm, off
}

func truncate(t *testing.T, ctx context.Context, db *pgconn.PgConn) {
	t.Helper()
	if _, err := db.Exec(ctx, "TRUNCATE prng_diff, prng_gen").ReadAll(); err != nil {
		t.Fatal(err)
	}
}

// rows returns the stored values in client, transaction order.
func rows(t *testing.T, ctx context.Context, db *pgconn.PgConn) [][]string {
	t.Helper()
	res := db.ExecParams(ctx, "SELECT "+seedDiffColumns+" FROM prng_diff ORDER BY cid, n", nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	out := make([][]string, len(res.Rows))
	for i, row := range res.Rows {
		out[i] = make([]string, len(row))
		for j, v := range row {
			out[i][j] = string(v)
		}
	}
	return out
}

// TestRandomSeedParsing compares how firedrill and the real pgbench read
// --random-seed: both print the seed they set (or reject the option)
// before connecting, so a server that is not there is enough.
func TestRandomSeedParsing(t *testing.T) {
	pgbench := findPgbench(t)
	dir := t.TempDir() // no server: the connection fails after the seed is read
	re := regexp.MustCompile(`setting random seed to (\d+)|(unrecognized random seed option)`)
	for _, seed := range []string{"0", "1", "42", "-1", "-0", "+5", " 7", "\t8", "18446744073709551615",
		"18446744073709551616", "99999999999999999999999", "-18446744073709551615", "-9223372036854775808",
		"5 ", "0x10", "1e3", "abc", "-", "+", "12a", "007"} {
		args := []string{"-n", "-t", "1", "--random-seed=" + seed, "-h", dir, "-p", "1"}
		out, _ := exec.Command(pgbench, args...).CombinedOutput()
		want := re.FindStringSubmatch(string(out))
		if want == nil {
			t.Fatalf("--random-seed=%q: pgbench printed neither the seed nor a rejection:\n%s", seed, out)
		}
		env, _, errb := clikit.MemoryEnv("")
		cli.Main(env, kinds.Registry(), append([]string{"pgbench"}, args...))
		got := re.FindStringSubmatch(errb.String())
		if got == nil || got[0] != want[0] {
			t.Errorf("--random-seed=%q: pgbench %q, firedrill %q", seed, want[0], errb.String())
		}
	}
}

// diffServer starts a throwaway server for a differential test, stopped
// at the test's end, and finds the pgbench of the same installation.
func diffServer(t *testing.T, timeout time.Duration) (context.Context, *postgres.Instance, string) {
	t.Helper()
	pgbench := findPgbench(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	inst, err := postgres.Start(ctx, postgres.Options{})
	if err != nil {
		t.Fatalf("start a throwaway server: %v", err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(); err != nil {
			t.Errorf("stop server: %v", err)
		}
	})
	return ctx, inst, pgbench
}

// findPgbench returns the pgbench beside the server binaries a
// throwaway server runs from, or skips.
func findPgbench(t *testing.T) string {
	t.Helper()
	p, err := postgres.Pgbench()
	if err != nil {
		t.Skip(err)
	}
	return p
}

// TestSamplingRateSameTransactions: with one client and one thread,
// --sampling-rate logs the same transactions as pgbench for the same seed
// (pgbench's thread 0 generator for sampling, seeded as pgbench seeds it).
func TestSamplingRateSameTransactions(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test against pgbench skipped in -short mode")
	}
	ctx, inst, pgbench := diffServer(t, 2*time.Minute)
	dir := t.TempDir()
	sql := filepath.Join(dir, "s.sql")
	if err := os.WriteFile(sql, []byte("\\set a random(1, 10)\nSELECT :a;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logged := func(prefix string) []string {
		files, _ := filepath.Glob(prefix + ".*")
		if len(files) != 1 {
			t.Fatalf("log files %v, want one", files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		var txs []string
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 2 {
				txs = append(txs, f[1])
			}
		}
		return txs
	}
	for _, seed := range []string{"3", "42", "18446744073709551615"} {
		common := []string{"-n", "-c", "1", "-t", "300", "-f", sql, "-l", "--sampling-rate", "0.3", "--random-seed", seed,
			"-h", inst.Host(), "-p", strconv.Itoa(inst.Port()), "-U", inst.User(), inst.Database()}
		pgPrefix, fdPrefix := filepath.Join(dir, "pg"+seed), filepath.Join(dir, "fd"+seed)
		if out, err := exec.CommandContext(ctx, pgbench, append(common, "--log-prefix", pgPrefix)...).CombinedOutput(); err != nil {
			t.Fatalf("pgbench: %v\n%s", err, out)
		}
		env, out, errb := clikit.MemoryEnv("")
		if code := cli.Main(env, kinds.Registry(), append([]string{"pgbench", "--log-prefix", fdPrefix}, common...)); code != 0 {
			t.Fatalf("firedrill pgbench: exit %d\n%s\n%s", code, out, errb)
		}
		want, got := logged(pgPrefix), logged(fdPrefix)
		if len(want) < 50 || len(want) > 130 {
			t.Fatalf("seed %s: pgbench logged %d of 300 transactions at rate 0.3", seed, len(want))
		}
		if !slices.Equal(got, want) {
			t.Errorf("seed %s: firedrill logged transactions %v\npgbench logged %v", seed, got, want)
		}
	}
}

// TestRateScheduleSameAsPgbench: with one client per thread, --rate
// schedules the transactions at pgbench's times (relative to the start)
// for the same seed: per-thread pacers at the thread's share of the rate,
// drawing from pgbench's ts_throttle_rs. The schedule is recovered from
// -l (end time minus latency, which --rate measures from the scheduled
// start); both tools read the clock for the log a little after the
// transaction ends, so each point may be off by that: 75 % of the points
// must agree within 300 µs once the tools' start times are aligned, where
// another generator is off by milliseconds after a few transactions.
func TestRateScheduleSameAsPgbench(t *testing.T) {
	if testing.Short() {
		t.Skip("differential test against pgbench skipped in -short mode")
	}
	ctx, inst, pgbench := diffServer(t, 2*time.Minute)
	dir := t.TempDir()
	sql := filepath.Join(dir, "s.sql")
	if err := os.WriteFile(sql, []byte("SELECT 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// schedules returns each client's scheduled starts, in µs.
	schedules := func(prefix string) map[string][]int64 {
		files, _ := filepath.Glob(prefix + ".*")
		out := map[string][]int64{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.Lines(string(b)) {
				f := strings.Fields(line)
				if len(f) < 7 {
					t.Fatalf("%s: short log line %q", prefix, line)
				}
				lat, _ := strconv.ParseInt(f[2], 10, 64)
				sec, _ := strconv.ParseInt(f[4], 10, 64)
				us, _ := strconv.ParseInt(f[5], 10, 64)
				out[f[0]] = append(out[f[0]], sec*1_000_000+us-lat)
			}
		}
		return out
	}
	for _, c := range []struct{ seed, clients, rate string }{{"5", "1", "300"}, {"77", "2", "400"}, {"18446744073709551615", "3", "600"}} {
		common := []string{"-n", "-c", c.clients, "-j", c.clients, "-t", "40", "-R", c.rate, "-f", sql, "-l", "--random-seed", c.seed,
			"-h", inst.Host(), "-p", strconv.Itoa(inst.Port()), "-U", inst.User(), inst.Database()}
		pgPrefix, fdPrefix := filepath.Join(dir, "pg"+c.seed), filepath.Join(dir, "fd"+c.seed)
		if out, err := exec.CommandContext(ctx, pgbench, append(common, "--log-prefix", pgPrefix)...).CombinedOutput(); err != nil {
			t.Fatalf("pgbench: %v\n%s", err, out)
		}
		env, out, errb := clikit.MemoryEnv("")
		if code := cli.Main(env, kinds.Registry(), append([]string{"pgbench", "--log-prefix", fdPrefix}, common...)); code != 0 {
			t.Fatalf("firedrill pgbench: exit %d\n%s\n%s", code, out, errb)
		}
		want, got := schedules(pgPrefix), schedules(fdPrefix)
		n, _ := strconv.Atoi(c.clients)
		if len(want) != n || len(got) != n {
			t.Fatalf("seed %s: clients in the logs: pgbench %d, firedrill %d, want %d", c.seed, len(want), len(got), n)
		}
		for cid, w := range want {
			g := got[cid]
			if len(g) != len(w) {
				t.Fatalf("seed %s client %s: %d transactions, pgbench %d", c.seed, cid, len(g), len(w))
			}
			diffs := make([]int64, len(w))
			for i := range w {
				diffs[i] = g[i] - w[i]
			}
			offset := slices.Clone(diffs)
			slices.Sort(offset)
			align := offset[len(offset)/2]
			off, worst := 0, int64(0)
			for i := range diffs {
				d := diffs[i] - align
				if d < -300 || d > 300 {
					off++
				} else {
					worst = max(worst, d, -d)
				}
			}
			// Both logs time a transaction's end when its client gets
			// the CPU back, so on a loaded machine a few starts read
			// late on either side; a different schedule would differ
			// nearly everywhere, by a cumulated drift.
			if off*4 > len(w) {
				rel := func(xs []int64) []int64 {
					out := make([]int64, len(xs))
					for i := range xs {
						out[i] = xs[i] - xs[0]
					}
					return out
				}
				t.Errorf("seed %s client %s: %d of %d scheduled starts differ from pgbench's by over 300 µs\nfiredrill %v\npgbench   %v", c.seed, cid, off, len(w), rel(g), rel(w))
				continue
			}
			t.Logf("seed %s client %s: %d starts over %d µs; %d off by over 300 µs, the others within %d µs", c.seed, cid, len(w), w[len(w)-1]-w[0], off, worst)
		}
	}
}
