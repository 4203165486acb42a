package tpcb

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
)

// scaleSQL is how pgbench learns the scale of existing tables.
const scaleSQL = "select count(*) from pgbench_branches"

// partitionInfoSQL finds the first pgbench_accounts in search_path, its
// partition strategy (NULL if not partitioned) and its number of partitions;
// verbatim from pgbench.
const partitionInfoSQL = "select o.n, p.partstrat, pg_catalog.count(i.inhparent) " +
	"from pg_catalog.pg_class as c " +
	"join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) " +
	"cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) " +
	"left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) " +
	"left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) " +
	"where c.relname = 'pgbench_accounts' and o.n is not null " +
	"group by 1, 2 " +
	"order by 1 asc " +
	"limit 1"

// undefinedTable is SQLSTATE 42P01.
const undefinedTable = "42P01"

// Scale reads the scale of existing pgbench tables (count of
// pgbench_branches), as pgbench does for :scale; ok=false if the tables are
// absent.
func Scale(ctx context.Context, conn *pgconn.PgConn) (scale int, ok bool, err error) {
	result := conn.ExecParams(ctx, scaleSQL, nil, nil, nil, nil).Read()
	if result.Err != nil {
		var pgErr *pgconn.PgError
		if errors.As(result.Err, &pgErr) && pgErr.Code == undefinedTable {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("could not count number of branches: %w", result.Err)
	}
	if len(result.Rows) != 1 {
		return 0, false, fmt.Errorf("could not count number of branches: got %d rows", len(result.Rows))
	}
	count := string(result.Rows[0][0])
	scale, err = strconv.Atoi(count)
	if err != nil {
		return 0, false, fmt.Errorf("invalid count(*) from pgbench_branches: %q", count)
	}
	return scale, true, nil
}

// PartitionInfo reads the partitioning of pgbench_accounts (method "none",
// "range" or "hash", and the number of partitions), which pgbench prints in
// its summary.
func PartitionInfo(ctx context.Context, conn *pgconn.PgConn) (method string, partitions int, err error) {
	result := conn.ExecParams(ctx, partitionInfoSQL, nil, nil, nil, nil).Read()
	if result.Err != nil {
		return "", 0, fmt.Errorf("reading partitioning of pgbench_accounts: %w", result.Err)
	}
	if len(result.Rows) == 0 {
		return "", 0, errors.New(`no pgbench_accounts table found in "search_path"; run pgbench's initialization first`)
	}
	row := result.Rows[0]
	switch strategy := row[1]; {
	case strategy == nil:
		method = "none"
	case string(strategy) == "r":
		method = "range"
	case string(strategy) == "h":
		method = "hash"
	default:
		return "", 0, fmt.Errorf("unexpected partition method: %q", strategy)
	}
	partitions, err = strconv.Atoi(string(row[2]))
	if err != nil {
		return "", 0, fmt.Errorf("reading partitioning of pgbench_accounts: partition count %q: %w", row[2], err)
	}
	return method, partitions, nil
}
