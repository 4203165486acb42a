package tpcb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// dropTablesSQL drops all four tables in one statement, so foreign keys
// between them do not matter.
const dropTablesSQL = "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers"

// truncateTablesSQL empties all four tables in one statement, for the same
// reason.
const truncateTablesSQL = "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers"

// tableDef is one pgbench table: its columns when aid fits in int and when
// it needs bigint, and whether it takes the fillfactor. Only
// pgbench_accounts' filler is ever non-NULL, so the others stay short of
// TPC-B's 100 bytes per row; pgbench keeps that for comparability.
type tableDef struct {
	name           string
	columns        string
	bigintColumns  string
	withFillFactor bool
}

// tableDefs are pgbench's tables in its creation order, with its exact column
// text (including the spacing that lines up "aid    int").
var tableDefs = []tableDef{
	{
		name:          "pgbench_history",
		columns:       "tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22)",
		bigintColumns: "tid int,bid int,aid bigint,delta int,mtime timestamp,filler char(22)",
	},
	{
		name:           "pgbench_tellers",
		columns:        "tid int not null,bid int,tbalance int,filler char(84)",
		bigintColumns:  "tid int not null,bid int,tbalance int,filler char(84)",
		withFillFactor: true,
	},
	{
		name:           "pgbench_accounts",
		columns:        "aid    int not null,bid int,abalance int,filler char(84)",
		bigintColumns:  "aid bigint not null,bid int,abalance int,filler char(84)",
		withFillFactor: true,
	},
	{
		name:           "pgbench_branches",
		columns:        "bid int not null,bbalance int,filler char(88)",
		bigintColumns:  "bid int not null,bbalance int,filler char(88)",
		withFillFactor: true,
	},
}

// primaryKeySQL adds the primary keys, in pgbench's order.
var primaryKeySQL = []string{
	"alter table pgbench_branches add primary key (bid)",
	"alter table pgbench_tellers add primary key (tid)",
	"alter table pgbench_accounts add primary key (aid)",
}

// foreignKeySQL adds the foreign keys, in pgbench's order and with its
// constraint names.
var foreignKeySQL = []string{
	"alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
	"alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
	"alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
	"alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
	"alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
}

// vacuumSQL is the 'v' step, in pgbench's order.
var vacuumSQL = []string{
	"vacuum analyze pgbench_branches",
	"vacuum analyze pgbench_tellers",
	"vacuum analyze pgbench_accounts",
	"vacuum analyze pgbench_history",
}

// createTableStatements returns the 't' step's statements for opts (with
// defaults applied) against a server of the given major version.
func createTableStatements(opts InitOptions, serverVersion int) []string {
	var stmts []string
	for _, def := range tableDefs {
		partitioned := opts.Partitions > 0 && def.name == "pgbench_accounts"
		var b strings.Builder
		b.WriteString("create")
		// pgbench 15 marks the partitioned parent unlogged too; PostgreSQL 18
		// refuses that, and pgbench 18 leaves it off, so follow the server.
		if opts.Unlogged && (!partitioned || serverVersion < 18) {
			b.WriteString(" unlogged")
		}
		columns := def.columns
		if opts.Scale >= scale32BitThreshold {
			columns = def.bigintColumns
		}
		fmt.Fprintf(&b, " table %s(%s)", def.name, columns)
		if partitioned {
			fmt.Fprintf(&b, " partition by %s (aid)", opts.PartitionMethod)
		} else if def.withFillFactor {
			fmt.Fprintf(&b, " with (fillfactor=%d)", opts.FillFactor)
		}
		if opts.Tablespace != "" {
			b.WriteString(" tablespace " + quoteIdentifier(opts.Tablespace))
		}
		stmts = append(stmts, b.String())
	}
	return stmts
}

// createPartitionStatements returns the statements that create
// pgbench_accounts' partitions. Range partitions split the aids evenly, with
// open ends on the first and last so any aid has a home.
func createPartitionStatements(opts InitOptions) []string {
	unlogged := ""
	if opts.Unlogged {
		unlogged = " unlogged"
	}
	partitions := int64(opts.Partitions)
	partSize := (int64(AccountsPerScale)*int64(opts.Scale) + partitions - 1) / partitions
	var stmts []string
	for p := int64(1); p <= partitions; p++ {
		var b strings.Builder
		fmt.Fprintf(&b, "create%s table pgbench_accounts_%d\n  partition of pgbench_accounts\n", unlogged, p)
		if opts.PartitionMethod == "hash" {
			fmt.Fprintf(&b, "  for values with (modulus %d, remainder %d)", partitions, p-1)
		} else {
			from, to := "minvalue", "maxvalue"
			if p > 1 {
				from = strconv.FormatInt((p-1)*partSize+1, 10)
			}
			if p < partitions {
				to = strconv.FormatInt(p*partSize+1, 10)
			}
			fmt.Fprintf(&b, "  for values from (%s) to (%s)", from, to)
		}
		fmt.Fprintf(&b, " with (fillfactor=%d)", opts.FillFactor)
		stmts = append(stmts, b.String())
	}
	return stmts
}

// primaryKeyStatements returns the 'p' step's statements, placing the indexes
// in the index tablespace when one is given.
func primaryKeyStatements(opts InitOptions) []string {
	stmts := make([]string, len(primaryKeySQL))
	for i, sql := range primaryKeySQL {
		if opts.IndexTablespace != "" {
			sql += " using index tablespace " + quoteIdentifier(opts.IndexTablespace)
		}
		stmts[i] = sql
	}
	return stmts
}

// quoteIdentifier quotes a name as PQescapeIdentifier does.
func quoteIdentifier(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func (in *initializer) dropTables(ctx context.Context) error {
	in.out.printf("dropping old tables...\n")
	return in.exec(ctx, dropTablesSQL)
}

func (in *initializer) createTables(ctx context.Context) error {
	in.out.printf("creating tables...\n")
	if err := in.execAll(ctx, createTableStatements(in.opts, in.serverVersion)); err != nil {
		return err
	}
	if in.opts.Partitions == 0 {
		return nil
	}
	in.out.printf("creating %d partitions...\n", in.opts.Partitions)
	return in.execAll(ctx, createPartitionStatements(in.opts))
}

func (in *initializer) vacuum(ctx context.Context) error {
	in.out.printf("vacuuming...\n")
	return in.execAll(ctx, vacuumSQL)
}

func (in *initializer) createPrimaryKeys(ctx context.Context) error {
	in.out.printf("creating primary keys...\n")
	return in.execAll(ctx, primaryKeyStatements(in.opts))
}

func (in *initializer) createForeignKeys(ctx context.Context) error {
	in.out.printf("creating foreign keys...\n")
	return in.execAll(ctx, foreignKeySQL)
}

// execAll runs statements in order, stopping at the first failure.
func (in *initializer) execAll(ctx context.Context, stmts []string) error {
	for _, sql := range stmts {
		if err := in.exec(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}
