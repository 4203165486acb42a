package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/backend"
)

var _ backend.SetupMarker = (*target)(nil)

// shardMarksTable keeps, in firedrill's database, the split runs whose
// setup shard 0 has done; the other shards wait for their run's row.
const shardMarksTable = "firedrill_shard_setup"

// MarkSetupDone records that the setup of the split run key is done.
func (tg *target) MarkSetupDone(ctx context.Context, key string) error {
	db, err := tg.handle()
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+shardMarksTable+
		" (run VARCHAR(512) PRIMARY KEY, setup_done TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))"); err != nil {
		return fmt.Errorf("create %s.%s: %w", tg.database, shardMarksTable, err)
	}
	if _, err := db.ExecContext(ctx, "REPLACE INTO "+shardMarksTable+" (run) VALUES (?)", key); err != nil {
		return fmt.Errorf("mark setup done in %s.%s: %w", tg.database, shardMarksTable, err)
	}
	return nil
}

// SetupDone says whether shard 0 has marked the setup of the split run key
// done; a database or table not there yet is not an error, just not done.
func (tg *target) SetupDone(ctx context.Context, key string) (bool, error) {
	db, err := tg.handle()
	if err != nil {
		return false, err
	}
	var n int
	err = db.QueryRowContext(ctx, "SELECT count(*) FROM "+shardMarksTable+" WHERE run = ?", key).Scan(&n)
	var myErr *mysql.MySQLError
	switch {
	case errors.As(err, &myErr) && (myErr.Number == 1049 || myErr.Number == 1146): // unknown database, no such table
		return false, nil
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s.%s: %w", tg.database, shardMarksTable, err)
	}
	return n > 0, nil
}
