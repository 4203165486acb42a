package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/postgres/client/tpcb"
)

// Setup runs the scenario's setup once, before any load: the schema
// firedrill owns on a given server, pgbench's tables, then the SQL.
func (tg *target) Setup(ctx context.Context) (err error) {
	cfg, err := pgconn.ParseConfig(tg.userConnString)
	if err != nil {
		return fmt.Errorf("connection settings: %w", err)
	}
	cfg.RuntimeParams["application_name"] = "firedrill-setup"
	if tg.confined() {
		// Only firedrill's schema: pgbench's "drop table if exists
		// pgbench_accounts" or a setup file's "DROP TABLE customers" must
		// never resolve to the user's public tables. A startup parameter,
		// so that RESET and DISCARD ALL come back to it.
		cfg.RuntimeParams["search_path"] = quoteIdent(tg.schema)
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s:%d: %w\nIs the server running and accepting connections there? Check the scenario's target.dsn or --dsn, or remove them to use an embedded server.",
			cfg.Host, cfg.Port, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if tg.confined() {
		if tg.outsideBefore, err = tg.outsideObjects(ctx); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		if !tg.byPrivileges() { // else Open made it, owned by the run's group (or --run-as's)
			q := fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %s", quoteIdent(tg.schema))
			if _, err := conn.Exec(ctx, q).ReadAll(); err != nil {
				return fmt.Errorf("setup: create schema %s: %w", tg.schema, err)
			}
		}
		defer func() {
			if err == nil {
				err = backend.SetupChangedOutside(errOutside, tg.schema, tg.outsideBefore, func() (map[string]string, error) { return tg.outsideObjects(ctx) })
			}
		}()
	}
	if n := tg.sc.Setup.PgbenchScale; n > 0 {
		tg.logf("setup: pgbench tables at scale %d", n)
		if err := tpcb.Init(ctx, conn, tpcb.InitOptions{Scale: n, Quiet: true}, io.Discard); err != nil {
			return fmt.Errorf("setup: pgbench initialization: %w", err)
		}
	}
	for _, src := range tg.sc.Setup.SQL {
		name, text, err := backend.ReadSQLSource(tg.sc, src)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		tg.logf("setup: %s", name)
		t0 := time.Now()
		if _, err := conn.Exec(ctx, text).ReadAll(); err != nil {
			return fmt.Errorf("setup: %s", sqlErrorAt(name, src.File != "", text, err))
		}
		tg.logf("setup: done in %.1f s", time.Since(t0).Seconds())
	}
	return nil
}

// sqlErrorAt names where in the SQL a server error points (its
// position), as file:line:col when the SQL came from a file.
func sqlErrorAt(name string, isFile bool, text string, err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Position <= 0 || !isFile {
		return fmt.Sprintf("%s: %v", name, err)
	}
	line, col := 1, 1
	for i, r := range []rune(text) {
		if i >= int(pgErr.Position)-1 {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%s:%d:%d: %v", name, line, col, err)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// prefixLines prefixes lines written by lower layers for the run's log.
func prefixLines(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return w
}
