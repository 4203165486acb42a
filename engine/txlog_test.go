package engine

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// epoch is a whole second in Unix microseconds, so expected lines are easy
// to read: epoch+42 is written "1700000000 42".
const epoch = 1700000000 * 1000000

func logLines(t *testing.T, o PgbenchLogOptions, txs ...*TxRecord) string {
	t.Helper()
	var buf bytes.Buffer
	l := NewPgbenchLog(&buf, o)
	for _, tx := range txs {
		l.Log(tx)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.String()
}

func TestPgbenchLogTransactionLines(t *testing.T) {
	t.Parallel()
	ok := &TxRecord{Client: 3, TxNo: 7, Script: 1, LatencyUS: 1234, LagUS: 56, Retries: 2, EndUnixUS: epoch + 42}
	tests := []struct {
		name string
		opts PgbenchLogOptions
		tx   *TxRecord
		want string
	}{
		// The six columns every line has; the time_us column is not
		// zero-padded, as pgbench prints it with %ld.
		{"plain", PgbenchLogOptions{}, ok, "3 7 1234 1 1700000000 42\n"},
		// --rate adds the schedule lag.
		{"lag", PgbenchLogOptions{Throttled: true}, ok, "3 7 1234 1 1700000000 42 56\n"},
		// --max-tries other than 1 adds the retries.
		{"retries", PgbenchLogOptions{Retries: true}, ok, "3 7 1234 1 1700000000 42 2\n"},
		// Both, lag first.
		{"lag and retries", PgbenchLogOptions{Throttled: true, Retries: true}, ok, "3 7 1234 1 1700000000 42 56 2\n"},
		// A transaction skipped by --latency-limit has no latency.
		{
			"skipped", PgbenchLogOptions{Throttled: true, LatencyLimit: true},
			&TxRecord{Client: 0, TxNo: 1, Skipped: true, LagUS: 90000, EndUnixUS: epoch + 999999},
			"0 1 skipped 0 1700000000 999999 90000\n",
		},
		// Without --failures-detailed every failure is "failed".
		{
			"failed", PgbenchLogOptions{Retries: true},
			&TxRecord{Client: 1, TxNo: 2, Failure: Deadlock, Retries: 9, LatencyUS: 5, EndUnixUS: epoch + 1000000},
			"1 2 failed 0 1700000001 0 9\n",
		},
		// With it, the failure's kind.
		{
			"serialization", PgbenchLogOptions{FailuresDetailed: true},
			&TxRecord{Client: 1, TxNo: 2, Failure: Serialization, EndUnixUS: epoch},
			"1 2 serialization 0 1700000000 0\n",
		},
		{
			"deadlock", PgbenchLogOptions{FailuresDetailed: true, Retries: true},
			&TxRecord{Client: 12, TxNo: 300, Script: 2, Failure: Deadlock, Retries: 1, EndUnixUS: epoch + 7},
			"12 300 deadlock 2 1700000000 7 1\n",
		},
		// A successful transaction stays a latency under --failures-detailed.
		{"success detailed", PgbenchLogOptions{FailuresDetailed: true}, ok, "3 7 1234 1 1700000000 42\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := logLines(t, tt.opts, tt.tx); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// aggregateRun is a sequence of transactions over three one-second
// intervals, the second of them empty.
func aggregateRun() []*TxRecord {
	return []*TxRecord{
		{LatencyUS: 1000, LagUS: 100, EndUnixUS: epoch + 100},
		{LatencyUS: 3000, LagUS: 300, Retries: 2, EndUnixUS: epoch + 200},
		{Skipped: true, LagUS: 5000, EndUnixUS: epoch + 300},
		{Failure: Serialization, Retries: 1, LatencyUS: 77, EndUnixUS: epoch + 400},
		{Failure: Deadlock, LatencyUS: 88, EndUnixUS: epoch + 500},
		{LatencyUS: 500, EndUnixUS: epoch + 2500000},
	}
}

func TestPgbenchLogAggregateLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   PgbenchLogOptions
		golden string
	}{
		// No optional column applies: they are written as zeros, so the
		// line always has 15 columns.
		{"minimal", PgbenchLogOptions{AggregateSeconds: 1}, "aggregate_minimal.golden"},
		// --rate, --latency-limit, --max-tries and --failures-detailed:
		// every column carries its value.
		{
			"every column",
			PgbenchLogOptions{AggregateSeconds: 1, Throttled: true, LatencyLimit: true, Retries: true, FailuresDetailed: true},
			"aggregate_full.golden",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := logLines(t, tt.opts, aggregateRun()...)
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			if len(lines) != 3 {
				t.Errorf("got %d lines, want 3 (one per interval, the empty one included):\n%s", len(lines), got)
			}
			for i, line := range lines {
				if n := len(strings.Fields(line)); n != 15 {
					t.Errorf("line %d has %d columns, want 15: %q", i+1, n, line)
				}
			}
			compareGolden(t, tt.golden, got)
		})
	}
}

func TestPgbenchLogAggregateColumnOrder(t *testing.T) {
	t.Parallel()
	// The first interval of aggregateRun with every column on, computed
	// by hand in pgbench 15's order (see writeAgg).
	want := []string{
		"1700000000", // interval_start
		"2",          // num_transactions: the two successes
		"4000",       // sum_latency
		"10000000",   // sum_latency_2: 1000² + 3000²
		"1000",       // min_latency
		"3000",       // max_latency
		"400",        // sum_lag
		"100000",     // sum_lag_2: 100² + 300²
		"100",        // min_lag
		"300",        // max_lag
		"1",          // skipped
		"2",          // retried: a success and a failure
		"3",          // retries
		"1",          // serialization_failures
		"1",          // deadlock_failures
	}
	got := logLines(t, PgbenchLogOptions{AggregateSeconds: 1, Throttled: true, LatencyLimit: true, Retries: true, FailuresDetailed: true},
		aggregateRun()...)
	first, _, _ := strings.Cut(got, "\n")
	if first != strings.Join(want, " ") {
		t.Errorf("first interval\ngot  %q\nwant %q", first, strings.Join(want, " "))
	}
}

func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestPgbenchLogSampling(t *testing.T) {
	t.Parallel()
	const n = 100000
	tests := []struct {
		name     string
		rate     float64
		min, max int // lines expected
	}{
		// 0 and 1 mean "log everything", as pgbench's default.
		{"unset", 0, n, n},
		{"one", 1, n, n},
		// --sampling-rate 0.1: binomial, stddev ≈ 95 lines; ± 5 %
		// of the mean is over five of them.
		{"tenth", 0.1, 9500, 10500},
		// A small rate still logs some, in proportion.
		{"hundredth", 0.01, 900, 1100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			l := NewPgbenchLog(&buf, PgbenchLogOptions{SampleRate: tt.rate, Seed: 7})
			for i := range n {
				l.Log(&TxRecord{TxNo: int64(i), LatencyUS: 100, EndUnixUS: epoch + int64(i)})
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if got := bytes.Count(buf.Bytes(), []byte("\n")); got < tt.min || got > tt.max {
				t.Errorf("%d lines of %d, want between %d and %d", got, n, tt.min, tt.max)
			}
		})
	}
}

func TestPgbenchLogConcurrentClients(t *testing.T) {
	t.Parallel()
	// Clients log from their own goroutines: lines must never interleave.
	const clients, each = 8, 2000
	var buf bytes.Buffer
	l := NewPgbenchLog(&buf, PgbenchLogOptions{Throttled: true, Retries: true})
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				l.Log(&TxRecord{Client: c, TxNo: int64(i + 1), LatencyUS: int64(1000 + i), LagUS: 3, EndUnixUS: epoch + int64(i)})
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != clients*each {
		t.Fatalf("%d lines, want %d", len(lines), clients*each)
	}
	for _, line := range lines {
		if n := len(strings.Fields(line)); n != 8 {
			t.Fatalf("malformed line %q: %d columns, want 8", line, n)
		}
	}
}
