package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/scenario"
)

var _ backend.SetupMarker = (*target)(nil)

// shardMarksTable keeps, in firedrill's schema, the split runs whose setup
// shard 0 has done; the other shards wait for their run's row.
const shardMarksTable = "firedrill_shard_setup"

// markSQL and doneSQL are the statements of MarkSetupDone and SetupDone
// ($1 the run's key); %s is the schema, quoted.
const (
	markSQL   = `CREATE TABLE IF NOT EXISTS %[1]s.` + shardMarksTable + ` (run text PRIMARY KEY, setup_done timestamptz NOT NULL DEFAULT now())`
	insertSQL = `INSERT INTO %s.` + shardMarksTable + ` (run) VALUES ($1) ON CONFLICT (run) DO UPDATE SET setup_done = now()`
	doneSQL   = `SELECT count(*) FROM %s.` + shardMarksTable + ` WHERE run = $1`
)

// markSchema is where the marks are: the schema firedrill owns.
func (tg *target) markSchema() string {
	if tg.schema != "" {
		return quoteIdent(tg.schema)
	}
	return quoteIdent(scenario.DefaultSchema)
}

// MarkSetupDone records that the setup of the split run key is done.
func (tg *target) MarkSetupDone(ctx context.Context, key string) error {
	conn, err := tg.markConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	mark := fmt.Sprintf(markSQL, tg.markSchema())
	if !tg.byPrivileges() { // else Open made the schema, and the role may not create one
		mark = "CREATE SCHEMA IF NOT EXISTS " + tg.markSchema() + "; " + mark
	}
	if _, err := conn.Exec(ctx, mark).ReadAll(); err != nil {
		return fmt.Errorf("create %s.%s: %w", tg.markSchema(), shardMarksTable, err)
	}
	res := conn.ExecParams(ctx, fmt.Sprintf(insertSQL, tg.markSchema()), [][]byte{[]byte(key)}, nil, nil, nil).Read()
	if res.Err != nil {
		return fmt.Errorf("mark setup done in %s.%s: %w", tg.markSchema(), shardMarksTable, res.Err)
	}
	return nil
}

// SetupDone says whether shard 0 has marked the setup of the split run key
// done; a table not there yet is not an error, just not done.
func (tg *target) SetupDone(ctx context.Context, key string) (bool, error) {
	conn, err := tg.markConn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	res := conn.ExecParams(ctx, fmt.Sprintf(doneSQL, tg.markSchema()), [][]byte{[]byte(key)}, nil, nil, nil).Read()
	if res.Err != nil {
		var pgErr *pgconn.PgError
		if errors.As(res.Err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
			return false, nil // undefined table or schema: shard 0 has not got there
		}
		return false, fmt.Errorf("read %s.%s: %w", tg.markSchema(), shardMarksTable, res.Err)
	}
	return len(res.Rows) == 1 && string(res.Rows[0][0]) != "0", nil
}

// markConn connects as the scenario's SQL does, so that the marks table
// belongs to the schema's owner like the rest of it.
func (tg *target) markConn(ctx context.Context) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(tg.userConnString)
	if err != nil {
		return nil, fmt.Errorf("connection settings: %w", err)
	}
	cfg.RuntimeParams["application_name"] = "firedrill-setup"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return conn, nil
}
