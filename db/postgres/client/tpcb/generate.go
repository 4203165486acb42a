package tpcb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
)

// logStepSeconds is how often -q prints progress, as pgbench's LOG_STEP_SECONDS.
const logStepSeconds = 5

// rowsPerProgressLine is how often progress is printed without -q.
const rowsPerProgressLine = 100000

// maxRowLen bounds one formatted row: two 20-digit numbers, "\t0\t\\N\n"
// and a tab.
const maxRowLen = 20 + 1 + 20 + len("\t0\t\\N\n")

// copyTable describes how to generate one table's rows for COPY in text
// format: row k (from 0) is "k+1 [\t k/perParent+1] tail".
type copyTable struct {
	name      string
	perScale  int64  // rows per unit of scale
	perParent int64  // rows per parent row for the second column; 0 = no such column
	tail      string // the constant columns and the newline
}

// Client-side tables in pgbench's fill order: branches, tellers, accounts,
// so existing foreign keys are satisfied. The filler of branches and tellers
// is NULL; that of accounts is the empty string, which char(84) pads.
var (
	branchesTable = copyTable{name: "pgbench_branches", perScale: BranchesPerScale, tail: "\t0\t\\N\n"}
	tellersTable  = copyTable{name: "pgbench_tellers", perScale: TellersPerScale, perParent: TellersPerScale, tail: "\t0\t\\N\n"}
	accountsTable = copyTable{name: "pgbench_accounts", perScale: AccountsPerScale, perParent: AccountsPerScale, tail: "\t0\t\n"}
)

// rowReader is an io.Reader over a table's COPY text. It formats rows
// straight into the caller's buffer: no allocation per row or per Read.
type rowReader struct {
	table copyTable
	total int64 // rows to produce
	next  int64 // rows produced so far

	id         decimalCounter // next row's first column, as text
	parent     []byte         // current second column, as text
	parentLeft int64          // rows before the second column changes

	pending []byte // tail of a row that did not fit in the last Read
	scratch [maxRowLen]byte

	// reportEvery > 0 calls report after each multiple of it rows; this
	// keeps the per-row loop free of a modulo.
	reportEvery int64
	report      func(rows int64) error

	ctx context.Context
}

func newRowReader(ctx context.Context, table copyTable, scale int) *rowReader {
	r := &rowReader{
		table: table,
		total: table.perScale * int64(scale),
		ctx:   ctx,
	}
	r.id.set(1)
	if table.perParent > 0 {
		r.parent = strconv.AppendInt(r.parent, 1, 10)
		r.parentLeft = table.perParent
	}
	return r
}

// Read fills p with whole rows, and the start of one more when p is too
// small for even one.
func (r *rowReader) Read(p []byte) (int, error) {
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	if len(r.pending) > 0 {
		return n, nil
	}
	if r.next == r.total {
		if n > 0 {
			return n, nil
		}
		return 0, io.EOF
	}
	if err := r.ctx.Err(); err != nil {
		return n, err
	}
	if n == 0 && len(p) < maxRowLen {
		row := r.appendRows(r.scratch[:0], 1)
		n = copy(p, row)
		r.pending = row[n:]
		return n, r.afterRows()
	}

	// Stop at the next report boundary so report runs between rows.
	count := min(r.total-r.next, int64((len(p)-n)/maxRowLen))
	if r.reportEvery > 0 {
		count = min(count, r.reportEvery-r.next%r.reportEvery)
	}
	if count == 0 {
		return n, nil
	}
	out := r.appendRows(p[:n:len(p)], count)
	return len(out), r.afterRows()
}

// afterRows reports progress when the rows just made end on a report
// boundary.
func (r *rowReader) afterRows() error {
	if r.reportEvery > 0 && r.next%r.reportEvery == 0 {
		return r.report(r.next)
	}
	return nil
}

// appendRows formats the next count rows onto dst, which must have room.
func (r *rowReader) appendRows(dst []byte, count int64) []byte {
	for range count {
		dst = append(dst, r.id.text()...)
		r.id.increment()
		if r.table.perParent > 0 {
			dst = append(dst, '\t')
			dst = append(dst, r.parent...)
			r.parentLeft--
			if r.parentLeft == 0 {
				parentID := (r.next+1)/r.table.perParent + 1
				r.parent = strconv.AppendInt(r.parent[:0], parentID, 10)
				r.parentLeft = r.table.perParent
			}
		}
		dst = append(dst, r.table.tail...)
		r.next++
	}
	return dst
}

// decimalCounter is a positive integer kept as decimal text, so counting up
// costs a digit bump instead of a conversion.
type decimalCounter struct {
	digits [20]byte
	start  int // index of the first digit in digits
}

func (c *decimalCounter) set(v int64) {
	s := strconv.AppendInt(nil, v, 10)
	c.start = len(c.digits) - len(s)
	copy(c.digits[c.start:], s)
}

func (c *decimalCounter) text() []byte { return c.digits[c.start:] }

func (c *decimalCounter) increment() {
	for i := len(c.digits) - 1; i >= c.start; i-- {
		if c.digits[i] < '9' {
			c.digits[i]++
			return
		}
		c.digits[i] = '0'
	}
	c.start--
	c.digits[c.start] = '1'
}

// copyStatement returns the COPY for table: with FREEZE on v14 and later for
// ordinary tables (a partitioned parent refuses it), as pgbench does, so that
// vacuum later has nothing to freeze.
func (in *initializer) copyStatement(ctx context.Context, table string) (string, error) {
	if in.serverVersion < 14 {
		return "copy " + table + " from stdin", nil
	}
	result := in.conn.ExecParams(ctx, "select relkind from pg_catalog.pg_class where oid = $1::text::regclass",
		[][]byte{[]byte(table)}, nil, nil, nil).Read()
	if result.Err != nil {
		return "", fmt.Errorf("reading relkind of %s: %w", table, result.Err)
	}
	if len(result.Rows) == 1 && string(result.Rows[0][0]) == "r" {
		return "copy " + table + " from stdin with (freeze on)", nil
	}
	return "copy " + table + " from stdin", nil
}

// generateClientSide is the 'g' step: truncate and COPY all rows in one
// transaction; truncating in the same transaction is what allows COPY FREEZE.
// pgbench 15 INSERTs branches and tellers one row at a time (16 and later
// COPY them); the rows are the same, and COPY keeps large scales fast.
func (in *initializer) generateClientSide(ctx context.Context) error {
	in.out.printf("generating data (client-side)...\n")
	return in.inTransaction(ctx, func(ctx context.Context) error {
		if err := in.exec(ctx, truncateTablesSQL); err != nil {
			return err
		}
		for _, table := range []copyTable{branchesTable, tellersTable, accountsTable} {
			if err := in.copyTable(ctx, table); err != nil {
				return err
			}
		}
		return nil
	})
}

// copyTable streams one table's rows through COPY, printing progress for
// pgbench_accounts as pgbench does.
func (in *initializer) copyTable(ctx context.Context, table copyTable) error {
	sql, err := in.copyStatement(ctx, table.name)
	if err != nil {
		return err
	}
	rows := newRowReader(ctx, table, in.opts.Scale)
	if table.name == accountsTable.name {
		progress := &copyProgress{out: in.out, total: rows.total, quiet: in.opts.Quiet, start: time.Now(), logInterval: 1}
		rows.reportEvery, rows.report = progress.every(), progress.rowsDone
		// On a server error pgconn returns before its goroutine reading rows
		// stops; make sure that goroutine prints nothing after we return.
		defer progress.stop()
	}
	_, err = in.conn.CopyFrom(ctx, rows, sql)
	if err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// generateServerSide is the 'G' step: the server makes the rows with
// generate_series, in one transaction as for 'g'.
func (in *initializer) generateServerSide(ctx context.Context) error {
	in.out.printf("generating data (server-side)...\n")
	return in.inTransaction(ctx, func(ctx context.Context) error {
		return in.execAll(ctx, serverSideStatements(in.opts.Scale))
	})
}

// serverSideStatements are the 'G' step's statements after begin, verbatim
// from pgbench.
func serverSideStatements(scale int) []string {
	return []string{
		truncateTablesSQL,
		fmt.Sprintf("insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, %d) as bid",
			BranchesPerScale*scale),
		fmt.Sprintf("insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / %d + 1, 0 from generate_series(1, %d) as tid",
			TellersPerScale, TellersPerScale*scale),
		fmt.Sprintf("insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / %d + 1, 0, '' from generate_series(1, %d) as aid",
			AccountsPerScale, int64(AccountsPerScale)*int64(scale)),
	}
}

// copyProgress prints pgbench's "N of M tuples" lines: every 100000 rows, or
// with -q at most every 5 seconds (checking the clock every 100 rows).
type copyProgress struct {
	out         *progressWriter
	total       int64
	quiet       bool
	start       time.Time
	logInterval int // with -q, the next line is due at logInterval*5 s

	mu      sync.Mutex
	stopped bool
}

// errCopyStopped ends a COPY's row stream that outlived its COPY.
var errCopyStopped = errors.New("copy already ended")

func (p *copyProgress) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

func (p *copyProgress) every() int64 {
	if p.quiet {
		return 100
	}
	return rowsPerProgressLine
}

func (p *copyProgress) rowsDone(rows int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errCopyStopped
	}
	elapsed := time.Since(p.start).Seconds()
	if p.quiet {
		if rows != p.total && elapsed < float64(p.logInterval*logStepSeconds) {
			return nil
		}
		p.logInterval = int(math.Ceil(elapsed / logStepSeconds))
	}
	remaining := float64(p.total-rows) * elapsed / float64(rows)
	p.out.printf("%d of %d tuples (%d%%) done (elapsed %.2f s, remaining %.2f s)\n",
		rows, p.total, rows*100/p.total, elapsed, remaining)
	return nil
}

// progressWriter serializes writes to the user's log and keeps the first
// write error for Init to return.
type progressWriter struct {
	mu       sync.Mutex
	w        io.Writer
	writeErr error
}

func (p *progressWriter) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.writeErr != nil {
		return
	}
	if _, err := fmt.Fprintf(p.w, format, args...); err != nil {
		p.writeErr = err
	}
}

func (p *progressWriter) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writeErr
}
