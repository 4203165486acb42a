package tpcb

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// naiveRows is the COPY text of a table written the obvious way, with
// pgbench's formats, to check the fast reader against.
func naiveRows(table copyTable, scale int) []byte {
	var b bytes.Buffer
	for k := range table.perScale * int64(scale) {
		switch table.name {
		case "pgbench_branches":
			fmt.Fprintf(&b, "%d\t0\t\\N\n", k+1)
		case "pgbench_tellers":
			fmt.Fprintf(&b, "%d\t%d\t0\t\\N\n", k+1, k/TellersPerScale+1)
		case "pgbench_accounts":
			fmt.Fprintf(&b, "%d\t%d\t0\t\n", k+1, k/AccountsPerScale+1)
		}
	}
	return b.Bytes()
}

func TestRowReaderMatchesPgbenchFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		table copyTable
		scale int
		read  func(io.Reader) io.Reader
	}{
		// Whole rows per Read, as pgconn's 64 KiB buffer asks.
		{"accounts scale 2", accountsTable, 2, func(r io.Reader) io.Reader { return r }},
		// Tellers carry a second column that changes every 10 rows.
		{"tellers scale 12", tellersTable, 12, func(r io.Reader) io.Reader { return r }},
		{"branches scale 3", branchesTable, 3, func(r io.Reader) io.Reader { return r }},
		// A reader smaller than one row must split rows across Reads.
		{"accounts one byte at a time", accountsTable, 1, iotest.OneByteReader},
		{"tellers half reads", tellersTable, 3, iotest.HalfReader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want := naiveRows(tt.table, tt.scale)
			got, err := io.ReadAll(tt.read(newRowReader(context.Background(), tt.table, tt.scale)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("rows differ: got %d bytes, want %d; first difference at byte %d",
					len(got), len(want), firstDifference(got, want))
			}
			if err := iotest.TestReader(newRowReader(context.Background(), tt.table, tt.scale), want); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestRowReaderReportsEachBoundaryOnce(t *testing.T) {
	t.Parallel()
	r := newRowReader(context.Background(), accountsTable, 3)
	var reported []int64
	r.reportEvery = rowsPerProgressLine
	r.report = func(rows int64) error { reported = append(reported, rows); return nil }
	// Odd buffer sizes so boundaries fall in the middle of a buffer.
	buf := make([]byte, 4099)
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []int64{100000, 200000, 300000}; fmt.Sprint(reported) != fmt.Sprint(want) {
		t.Fatalf("reported %v, want %v", reported, want)
	}
}

func TestRowReaderStopsOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	r := newRowReader(ctx, accountsTable, 1)
	buf := make([]byte, 1024)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := r.Read(buf); err != context.Canceled {
		t.Fatalf("Read after cancel: %v, want context.Canceled", err)
	}
}

func TestDecimalCounter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		start int64
		steps int
		want  string
	}{
		{1, 0, "1"},
		{1, 8, "9"},
		{9, 1, "10"}, // carry adds a digit
		{99999, 1, "100000"},
		{1099, 1, "1100"},
		{999999999999999998, 1, "999999999999999999"},
	}
	for _, tt := range tests {
		var c decimalCounter
		c.set(tt.start)
		for range tt.steps {
			c.increment()
		}
		if got := string(c.text()); got != tt.want {
			t.Errorf("%d + %d = %s, want %s", tt.start, tt.steps, got, tt.want)
		}
	}
}

func TestCopyProgressLines(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	p := &copyProgress{out: &progressWriter{w: &out}, total: 200000, logInterval: 1}
	for _, rows := range []int64{100000, 200000} {
		if err := p.rowsDone(rows); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %q, want two lines", out.String())
	}
	for i, prefix := range []string{"100000 of 200000 tuples (50%) done (elapsed ", "200000 of 200000 tuples (100%) done (elapsed "} {
		if !strings.HasPrefix(lines[i], prefix) || !strings.HasSuffix(lines[i], " s)") {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], prefix)
		}
	}
	p.stop()
	if err := p.rowsDone(200000); err != errCopyStopped {
		t.Fatalf("rowsDone after stop: %v", err)
	}
}

func TestCopyProgressQuietEveryFiveSeconds(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	p := &copyProgress{out: &progressWriter{w: &out}, total: 1000, quiet: true,
		start: time.Now().Add(-6 * time.Second), logInterval: 1}
	for _, rows := range []int64{100, 200, 300, 1000} {
		if err := p.rowsDone(rows); err != nil {
			t.Fatal(err)
		}
	}
	// 6 s in, the first line is due; the next not before 10 s, but the
	// last row always gets one.
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "100 of 1000 tuples (10%)") || !strings.HasPrefix(lines[1], "1000 of 1000 tuples (100%)") {
		t.Fatalf("quiet progress:\n%s", out.String())
	}
}

// BenchmarkGenerateAccounts measures formatting pgbench_accounts rows alone,
// read in pgconn's 64 KiB chunks.
func BenchmarkGenerateAccounts(b *testing.B) {
	buf := make([]byte, 65531)
	rowsPerPass := int64(AccountsPerScale)
	var bytesOut int64
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := newRowReader(context.Background(), accountsTable, 1)
		for {
			n, err := r.Read(buf)
			bytesOut += int64(n)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*rowsPerPass), "ns/row")
	b.SetBytes(bytesOut / int64(b.N))
}
