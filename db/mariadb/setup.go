package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/backend"
)

// Setup runs the scenario's setup once, before any load: on a given server
// firedrill's own database (created if missing, after checking that the
// SQL stays in it), then the SQL files, statement by statement as the
// mysql client runs a file.
func (tg *target) Setup(ctx context.Context) (err error) {
	if tg.confined() {
		if err := tg.checkConfinement(); err != nil {
			return err
		}
		if tg.outsideBefore, err = tg.outsideObjects(ctx); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		if err := tg.createDatabase(ctx); err != nil {
			return err
		}
		defer func() {
			if err == nil {
				err = backend.SetupChangedOutside(errOutside, tg.database, tg.outsideBefore, func() (map[string]string, error) { return tg.outsideObjects(ctx) })
			}
		}()
	}
	if len(tg.sc.Setup.SQL) == 0 {
		return nil
	}
	db, err := tg.handle()
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("setup: %w", connectHint(tg.user.Addr, tg.user.User, err))
	}
	defer conn.Close()
	for _, src := range tg.sc.Setup.SQL {
		name, text, err := backend.ReadSQLSource(tg.sc, src)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		tg.logf("setup: %s", name)
		t0 := time.Now()
		for _, stmt := range splitStatements(text) {
			if _, err := conn.ExecContext(ctx, stmt.Text); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("setup: %s", sqlErrorAt(name, src.File != "", stmt, err))
			}
		}
		tg.logf("setup: done in %.1f s", time.Since(t0).Seconds())
	}
	return nil
}

// createDatabase creates firedrill's database on a given server, as the
// account setup runs as (its privileges on the database let it).
func (tg *target) createDatabase(ctx context.Context) error {
	connector, err := mysql.NewConnector(tg.userConfig(""))
	if err != nil {
		return fmt.Errorf("setup: connection settings: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(tg.database)); err != nil {
		var myErr *mysql.MySQLError
		if errors.As(err, &myErr) {
			return fmt.Errorf("setup: create the database %s, where firedrill keeps its tables on a given server: %w\n"+
				"Grant the user CREATE on it (GRANT ALL ON %s.* TO …), or name a database it may use with setup.schema", tg.database, err, quoteIdent(tg.database))
		}
		return fmt.Errorf("setup: %w", connectHint(tg.user.Addr, tg.user.User, err))
	}
	return nil
}

// syntaxAt finds where the server says a syntax error is: "… near 'FRM t'
// at line 2".
var syntaxAt = regexp.MustCompile(`(?s)near '(.*)' at line (\d+)\s*$`)

// sqlErrorAt names where in the file a statement failed, as file:line:col
// when the SQL came from a file: the statement's start, or for a syntax
// error the place the server points at.
func sqlErrorAt(name string, isFile bool, stmt statement, err error) string {
	line, col := stmt.Line, stmt.Col
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		if m := syntaxAt.FindStringSubmatch(myErr.Message); m != nil {
			if n, convErr := strconv.Atoi(m[2]); convErr == nil && n >= 1 {
				lines := strings.Split(stmt.Text, "\n")
				if n <= len(lines) {
					within := lines[n-1]
					if n > 1 {
						line, col = stmt.Line+n-1, 1
					}
					if m[1] != "" {
						near := m[1]
						if at := strings.Index(within, near); at >= 0 {
							col += len([]rune(within[:at]))
						} else if at := strings.Index(within, strings.SplitN(near, "\n", 2)[0]); at >= 0 {
							col += len([]rune(within[:at]))
						}
					}
				}
			}
		}
	}
	if !isFile {
		return fmt.Sprintf("%s, statement at its line %d col %d: %v", name, line, col, err)
	}
	return fmt.Sprintf("%s:%d:%d: %v", name, line, col, err)
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }
