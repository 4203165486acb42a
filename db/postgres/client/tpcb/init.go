// Package tpcb is pgbench's TPC-B-like schema: it creates and fills the
// pgbench_* tables exactly as `pgbench -i` (PostgreSQL 15) does, and reads
// back the scale and partitioning that pgbench reports.
package tpcb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Row counts per unit of scale, as pgbench's nbranches, ntellers, naccounts.
const (
	BranchesPerScale = 1
	TellersPerScale  = 10
	AccountsPerScale = 100000
)

// Initialization step letters, as `pgbench -I` takes them.
const (
	// DefaultSteps is what `pgbench -i` runs when -I is not given.
	DefaultSteps = "dtgvp"
	// AllSteps lists every step letter pgbench accepts, in pgbench's order.
	AllSteps = "dtgGvpf"
)

// scale32BitThreshold is the scale from which aid columns are bigint; pgbench
// picks 20000 rather than the exact 21475 because it is easier to document.
const scale32BitThreshold = 20000

// InitOptions are the `pgbench -i` options that shape the schema and data.
type InitOptions struct {
	Scale           int    // -s: 100000 accounts per unit; 0 means 1
	FillFactor      int    // -F: fillfactor of tellers, accounts and branches; 0 means 100
	Steps           string // -I: step letters from AllSteps (spaces ignored); "" means DefaultSteps
	ForeignKeys     bool   // --foreign-keys: append step 'f' unless Steps has it
	Unlogged        bool   // --unlogged-tables
	Partitions      int    // --partitions: partition pgbench_accounts into this many parts; 0 = none
	PartitionMethod string // --partition-method: "range" or "hash"; "" means range when partitioned
	Tablespace      string // --tablespace: where tables go; "" = default
	IndexTablespace string // --index-tablespace: where primary key indexes go; "" = default
	Quiet           bool   // -q: progress every 5 s instead of every 100000 rows
}

// StepError reports an initialization step letter pgbench does not know.
type StepError struct {
	Step rune // the offending letter
}

// Error gives pgbench's message followed by its detail line, so a caller that
// prints only the error still shows the allowed letters.
func (e *StepError) Error() string {
	return fmt.Sprintf("unrecognized initialization step %q\n%s", string(e.Step), e.Detail())
}

// Detail is pgbench's second line for this error, for callers that print
// messages and details separately as pgbench does.
func (e *StepError) Detail() string {
	return `Allowed step characters are: "` + AllSteps + `".`
}

// CheckSteps validates an -I string as pgbench's checkInitSteps does, so a CLI
// can reject a bad option before connecting.
func CheckSteps(steps string) error {
	if steps == "" {
		return errors.New("no initialization steps specified")
	}
	for _, step := range steps {
		if !strings.ContainsRune(AllSteps+" ", step) {
			return &StepError{Step: step}
		}
	}
	return nil
}

// withDefaults fills zero values with pgbench's defaults.
func (o InitOptions) withDefaults() InitOptions {
	if o.Scale == 0 {
		o.Scale = 1
	}
	if o.FillFactor == 0 {
		o.FillFactor = 100
	}
	if o.Steps == "" {
		o.Steps = DefaultSteps
	}
	if o.ForeignKeys && !strings.Contains(o.Steps, "f") {
		o.Steps += "f"
	}
	if o.Partitions > 0 && o.PartitionMethod == "" {
		o.PartitionMethod = "range"
	}
	return o
}

// Validate reports every option pgbench would refuse, joined into one error,
// so a user fixes them all at once.
func (o InitOptions) Validate() error {
	var problems []error
	if o.Scale < 0 {
		problems = append(problems, fmt.Errorf("-s/--scale must be in range 1..%d", 1<<31-1))
	}
	if o.FillFactor != 0 && (o.FillFactor < 10 || o.FillFactor > 100) {
		problems = append(problems, errors.New("-F/--fillfactor must be in range 10..100"))
	}
	if o.Steps != "" {
		if err := CheckSteps(o.Steps); err != nil {
			problems = append(problems, err)
		}
	}
	if o.Partitions < 0 {
		problems = append(problems, fmt.Errorf("--partitions must be in range 0..%d", 1<<31-1))
	}
	switch o.PartitionMethod {
	case "", "range", "hash":
	default:
		problems = append(problems, fmt.Errorf("invalid partition method, expecting \"range\" or \"hash\", got: %q", o.PartitionMethod))
	}
	if o.PartitionMethod != "" && o.Partitions == 0 {
		problems = append(problems, errors.New("--partition-method requires greater than zero --partitions"))
	}
	return errors.Join(problems...)
}

// initStep is one letter of -I: its name in the final summary and its work.
type initStep struct {
	name string
	run  func(in *initializer, ctx context.Context) error
}

// initSteps maps each step letter to what it does, in pgbench's words.
var initSteps = map[rune]initStep{
	'd': {"drop tables", (*initializer).dropTables},
	't': {"create tables", (*initializer).createTables},
	'g': {"client-side generate", (*initializer).generateClientSide},
	'G': {"server-side generate", (*initializer).generateServerSide},
	'v': {"vacuum", (*initializer).vacuum},
	'p': {"primary keys", (*initializer).createPrimaryKeys},
	'f': {"foreign keys", (*initializer).createForeignKeys},
}

// initializer carries one Init call's connection, options and output.
type initializer struct {
	conn          *pgconn.PgConn
	opts          InitOptions
	out           *progressWriter
	serverVersion int // major version, e.g. 15
}

// Init creates and fills pgbench's tables as `pgbench -i` does, printing
// pgbench-style progress to log (nil = silent).
func Init(ctx context.Context, conn *pgconn.PgConn, opts InitOptions, log io.Writer) error {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("pgbench init: %w", err)
	}
	if log == nil {
		log = io.Discard
	}
	in := &initializer{
		conn:          conn,
		opts:          opts.withDefaults(),
		out:           &progressWriter{w: log},
		serverVersion: serverMajorVersion(conn),
	}

	var summary strings.Builder
	var total time.Duration
	for _, letter := range in.opts.Steps {
		if letter == ' ' {
			continue
		}
		step := initSteps[letter]
		start := time.Now()
		if err := step.run(in, ctx); err != nil {
			return fmt.Errorf("pgbench init: %s: %w", step.name, err)
		}
		elapsed := time.Since(start)
		total += elapsed
		if summary.Len() > 0 {
			summary.WriteString(", ")
		}
		fmt.Fprintf(&summary, "%s %.2f s", step.name, elapsed.Seconds())
	}
	in.out.printf("done in %.2f s (%s).\n", total.Seconds(), summary.String())
	if err := in.out.err(); err != nil {
		return fmt.Errorf("pgbench init: writing progress: %w", err)
	}
	return nil
}

// serverMajorVersion reads the major version the server announced at
// connection; 0 if it did not, which turns off version-gated features.
func serverMajorVersion(conn *pgconn.PgConn) int {
	v := conn.ParameterStatus("server_version")
	major := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			break
		}
		major = major*10 + int(c-'0')
	}
	return major
}

// exec runs one statement and fails with the statement named, as pgbench's
// executeStatement does.
func (in *initializer) exec(ctx context.Context, sql string) error {
	results, err := in.conn.Exec(ctx, sql).ReadAll()
	if err == nil {
		for _, r := range results {
			if r.Err != nil {
				err = r.Err
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// inTransaction runs fill between begin and commit, so the backend can skip
// WAL and freeze rows for tables truncated in the same transaction; on
// failure it rolls back so the connection stays usable.
func (in *initializer) inTransaction(ctx context.Context, fill func(context.Context) error) error {
	if err := in.exec(ctx, "begin"); err != nil {
		return err
	}
	err := fill(ctx)
	if err == nil {
		return in.exec(ctx, "commit")
	}
	if !in.conn.IsClosed() {
		rollbackCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if rbErr := in.exec(rollbackCtx, "rollback"); rbErr != nil {
			err = errors.Join(err, rbErr)
		}
	}
	return err
}
