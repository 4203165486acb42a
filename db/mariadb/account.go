package mariadb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/scenario"
)

// On a given server the account of --dsn is the admin's: firedrill uses it
// for its own fixed statements only (making and dropping the confined
// account, samplers, SET GLOBAL and its records, KILL of the run's
// sessions). Setup SQL, workload scripts, sql and hold_transaction events
// and shell events run as a confined account instead, which has every
// privilege on firedrill's database and none anywhere else: whatever a
// scenario's SQL says (executable comments, routines, EXECUTE IMMEDIATE),
// the server itself refuses it the user's data.
//
// The run makes that account at Open, named firedrill_run_<16 hex digits>
// with a random password, for the host the server sees the --dsn account
// connect from (USER()), and drops it at Close. While the run lives, a
// session of the account of --dsn holds a named lock of the account's name:
// an account of that name whose lock is free and that has no session is a
// leftover of a run that was killed, which the next run (of any shard) and
// 'firedrill restore' drop.

// accountPrefix begins the name of every account a run makes.
const accountPrefix = "firedrill_run_"

// accountName matches the accounts runs make, and nothing an
// administrator would name by hand (firedrill_confined, the account
// 'firedrill grant' suggests).
var accountName = regexp.MustCompile(`^` + accountPrefix + `[0-9a-f]{16}$`)

// grantedAccount is the account 'firedrill grant' suggests making by hand.
const grantedAccount = "firedrill_confined"

// holdLockWait is the longest wait_timeout MariaDB and MySQL take: the
// session holding the run's lock idles for the whole run.
const holdLockWait = 31536000

// confinedAccount is the account a run made for itself on a given server.
type confinedAccount struct {
	name, host string
	// lock is the session of the account of --dsn that holds the named
	// lock of name until the run ends (closing it frees the lock).
	lock *sql.DB
}

// String is 'name'@'host', as SQL names the account.
func (a *confinedAccount) String() string { return quoteString(a.name) + "@" + quoteString(a.host) }

// confine decides, at Open on a given server, which account user-written
// SQL runs as: the --dsn account with --allow-outside-schema, the
// --run-as account, or one made for the run. It drops the accounts of
// killed runs first.
func (tg *target) confine(ctx context.Context) error {
	admin, err := tg.plainHandle()
	if err != nil {
		return err
	}
	defer admin.Close()
	if tg.spec.AllowOutsideSchema {
		tg.logf("--allow-outside-schema: setup, workloads and SQL events run as %s, the account of --dsn", tg.cfg.User)
		return nil
	}
	for _, line := range dropLeftovers(ctx, admin) {
		tg.logf("before the run: %s", line)
	}
	if tg.spec.RunAs != "" {
		return tg.useRunAs(ctx)
	}
	return tg.makeAccount(ctx, admin)
}

// makeAccount makes the run's confined account: named lock first, so that
// no other run takes it for a leftover, then CREATE USER and GRANT. An
// admin that may not make it gets the statements to make one by hand.
func (tg *target) makeAccount(ctx context.Context, admin *sql.DB) (err error) {
	name, password := accountPrefix+randomHex(8), randomHex(16)
	lockDB, err := tg.plainHandle()
	if err != nil {
		return err
	}
	lockDB.SetMaxOpenConns(1)
	lockDB.SetMaxIdleConns(1)
	lockDB.SetConnMaxLifetime(0)
	lockDB.SetConnMaxIdleTime(0)
	acct := &confinedAccount{name: name, lock: lockDB}
	defer func() {
		if err != nil {
			lockDB.Close()
		}
	}()
	conn, err := lockDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect to %s as %s: %w", tg.cfg.Addr, tg.cfg.User, connectHintIfNot(err))
	}
	defer conn.Close() // back to the pool of one, where it stays open
	// A workload or event idling the server must not end the lock's session.
	_, _ = conn.ExecContext(ctx, fmt.Sprintf("SET SESSION wait_timeout = %d", holdLockWait))
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got); err != nil || got.Int64 != 1 {
		return fmt.Errorf("take the lock %s that marks the run's account as in use on %s: %v", name, tg.cfg.Addr, err)
	}
	var who, version string
	if err := conn.QueryRowContext(ctx, "SELECT USER(), VERSION()").Scan(&who, &version); err != nil {
		return fmt.Errorf("read USER() on %s: %w", tg.cfg.Addr, err)
	}
	acct.host = who[strings.LastIndexByte(who, '@')+1:]
	identified := "IDENTIFIED BY " + quoteString(password)
	if productOf(version) == "MySQL" && nativePasswordActive(ctx, conn) {
		// caching_sha2_password, MySQL 8's default, needs TLS or the
		// server's RSA key for a new account's first login.
		identified = "IDENTIFIED WITH mysql_native_password BY " + quoteString(password)
	}
	create := fmt.Sprintf("CREATE USER %s %s WITH MAX_USER_CONNECTIONS %d", acct, identified, tg.sessionsNeeded())
	if _, err := conn.ExecContext(ctx, create); err != nil {
		return tg.cannotConfine(acct.host, err)
	}
	grant := fmt.Sprintf("GRANT ALL PRIVILEGES ON %s.* TO %s", grantDatabase(tg.database), acct)
	if _, err := conn.ExecContext(ctx, grant); err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DROP USER IF EXISTS "+acct.String())
		return tg.cannotConfine(acct.host, err)
	}
	if tg.spec.Secret != nil {
		tg.spec.Secret(password)
	}
	tg.account = acct
	tg.user = tg.cfg.Clone()
	tg.user.User, tg.user.Passwd = name, password
	tg.logf("setup, workloads and SQL events run as %s, which may use the database %s only (removed after the run)", acct, tg.database)
	tg.warnConnections(ctx, conn)
	return nil
}

// sessionsNeeded is how many sessions the user-written side of a run may
// open at once: the workloads' clients, a session per event, setup's and
// some to spare for reconnections. The account is limited to it, whatever
// the server's max_user_connections.
func (tg *target) sessionsNeeded() int {
	return tg.spec.Connections + 2*len(tg.sc.Events) + 16
}

// warnConnections says when the server has fewer free connections than
// the workloads will open: they would fail with "Too many connections".
func (tg *target) warnConnections(ctx context.Context, conn *sql.Conn) {
	var limit, connected int
	var name string
	if err := conn.QueryRowContext(ctx, "SELECT @@GLOBAL.max_connections").Scan(&limit); err != nil {
		return
	}
	if err := conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &connected); err != nil {
		return
	}
	if free := limit - connected; free < tg.spec.Connections {
		tg.logf("note: %s allows %d connections and has %d; the workloads open %d: those past it fail with \"Too many connections\" (raise max_connections, or lower the clients)",
			tg.cfg.Addr, limit, connected, tg.spec.Connections)
	}
}

// nativePasswordActive says whether a MySQL server still has
// mysql_native_password (8.4 has it off by default).
func nativePasswordActive(ctx context.Context, conn *sql.Conn) bool {
	var status string
	err := conn.QueryRowContext(ctx, "SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'mysql_native_password'").Scan(&status)
	return err == nil && status == "ACTIVE"
}

// cannotConfine is the error of an admin that may not make the confined
// account: what to run by hand, and the ways on.
func (tg *target) cannotConfine(host string, err error) error {
	if !isPrivilegeError(err) {
		return fmt.Errorf("make the confined account setup and workloads run as on %s: %w", tg.cfg.Addr, connectHintIfNot(err))
	}
	return fmt.Errorf("on %s the account of --dsn (%s) may not make the account firedrill runs setup, workloads and SQL events as, "+
		"confined to the database %s: %w\n"+
		"An administrator can make one by hand:\n\n%s\n"+
		"then run with --run-as %s\n"+
		"(or give %s CREATE USER and ALL PRIVILEGES ON %s.* WITH GRANT OPTION; "+
		"or run with --allow-outside-schema to run everything as %s, kept off the rest of the server by firedrill's lexical check alone)",
		tg.cfg.Addr, tg.cfg.User, tg.database, err, indent(grantText(host, tg.database)), runAsURL(tg.cfg),
		tg.cfg.User, grantDatabase(tg.database), tg.cfg.User)
}

// isPrivilegeError says whether err is the server refusing a statement
// for want of a privilege.
func isPrivilegeError(err error) bool {
	var myErr *mysql.MySQLError
	if !errors.As(err, &myErr) {
		return false
	}
	switch myErr.Number {
	case 1044, // ER_DBACCESS_DENIED_ERROR
		1045, // ER_ACCESS_DENIED_ERROR
		1142, // ER_TABLEACCESS_DENIED_ERROR
		1143, // ER_COLUMNACCESS_DENIED_ERROR
		1211, // ER_PASSWORD_NOT_ALLOWED
		1227, // ER_SPECIFIC_ACCESS_DENIED_ERROR
		1370, // ER_PROCACCESS_DENIED_ERROR
		1410: // ER_CANT_CREATE_USER_WITH_GRANT
		return true
	}
	return false
}

// grantText is the SQL that makes a confined account by hand for host,
// with PASSWORD where the password goes.
func grantText(host, database string) string {
	acct := quoteString(grantedAccount) + "@" + quoteString(host)
	return fmt.Sprintf("CREATE USER %s IDENTIFIED BY 'PASSWORD';\nGRANT ALL PRIVILEGES ON %s.* TO %s;", acct, grantDatabase(database), acct)
}

// runAsURL is the --run-as URL of the account grantText makes, on the
// server cfg reaches, and where its password goes: not in the URL, where
// firedrill's masking would hide the placeholder too.
func runAsURL(cfg *mysql.Config) string {
	if cfg.Net == "unix" {
		return fmt.Sprintf("'mysql://%s@localhost/?socket=%s' (with its password after the user name, as user:password@)", grantedAccount, cfg.Addr)
	}
	return fmt.Sprintf("mysql://%s@%s/ (with its password after the user name, as user:password@)", grantedAccount, cfg.Addr)
}

// Grant is what an administrator runs to make the confined account by
// hand, for --run-as: an account that may use the database only. It does
// not connect, so it cannot know the host the server sees firedrill
// connect from: '%' (any), or 'localhost' through a unix socket.
func (Backend) Grant(dsn, database string) (string, error) {
	given, err := parseDSN(dsn)
	if err != nil {
		return "", err
	}
	if database == "" {
		database = scenario.DefaultSchema
	}
	host := "%"
	if given.cfg.Net == "unix" {
		host = "localhost"
	}
	return fmt.Sprintf("-- On %s, as an administrator: an account that may use the database %s and nothing else\n"+
		"-- (no global privilege, no other database, no GRANT OPTION). Replace PASSWORD.\n"+
		"-- '%%' is any host: if the server has anonymous accounts (SELECT host FROM mysql.user WHERE user = ''),\n"+
		"-- name the host the server sees firedrill connect from instead (USER() in its session).\n"+
		"%s\n"+
		"-- Then: firedrill run … --dsn <admin URL> --run-as %s\n",
		given.cfg.Addr, database, grantText(host, database), runAsURL(given.cfg)), nil
}

// useRunAs takes the --run-as account for user-written SQL, once it has
// checked that the server confines it to the database.
func (tg *target) useRunAs(ctx context.Context) error {
	runAs, err := parseDSN(tg.spec.RunAs)
	if err != nil {
		return fmt.Errorf("--run-as: %w", err)
	}
	if tg.spec.Secret != nil && runAs.cfg.Passwd != "" {
		tg.spec.Secret(runAs.cfg.Passwd)
	}
	if runAs.cfg.Addr != tg.cfg.Addr {
		return fmt.Errorf("--run-as names the server %s, --dsn the server %s: give both for the same server, as reached the same way", runAs.cfg.Addr, tg.cfg.Addr)
	}
	connector, err := mysql.NewConnector(runAs.cfg)
	if err != nil {
		return fmt.Errorf("--run-as: connection settings: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	grants, err := showGrants(ctx, db)
	if err != nil {
		return fmt.Errorf("--run-as: %w", connectHint(runAs.cfg.Addr, runAs.cfg.User, err))
	}
	if beyond := grantsBeyond(grants, tg.database); len(beyond) > 0 {
		return fmt.Errorf("--run-as: the account %s may do more than use the database %s, so the server would not keep the scenario's SQL off the rest:\n  %s\n"+
			"Make it with the statements 'firedrill grant' prints, or run with --allow-outside-schema",
			runAs.cfg.User, tg.database, strings.Join(beyond, "\n  "))
	}
	var limit int
	if err := db.QueryRowContext(ctx, "SELECT @@max_user_connections").Scan(&limit); err == nil && limit > 0 && limit < tg.spec.Connections+2 {
		return fmt.Errorf("--run-as: the account %s may open %d sessions at once (max_user_connections) and the workloads open %d: "+
			"raise it (ALTER USER … WITH MAX_USER_CONNECTIONS %d)", runAs.cfg.User, limit, tg.spec.Connections, tg.sessionsNeeded())
	}
	tg.user = runAs.cfg
	tg.user.DBName = ""
	tg.userTLS, tg.userTLSOptional = runAs.tls, runAs.tlsOptional
	tg.logf("setup, workloads and SQL events run as %s (--run-as)", runAs.cfg.User)
	return nil
}

// showGrants is SHOW GRANTS of the session's account, a line each.
func showGrants(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		out = append(out, line)
	}
	return out, rows.Err()
}

// grantsBeyond lists the lines of SHOW GRANTS that give more than
// privileges on database: global privileges but USAGE, other databases,
// GRANT OPTION, roles, proxies.
func grantsBeyond(grants []string, database string) []string {
	var beyond []string
	for _, line := range grants {
		upper := strings.ToUpper(line)
		on, to := strings.Index(upper, " ON "), strings.LastIndex(upper, " TO ")
		if !strings.HasPrefix(upper, "GRANT ") || on < 0 || to < on || strings.Contains(upper, "WITH GRANT OPTION") || strings.HasPrefix(upper, "GRANT PROXY") {
			beyond = append(beyond, line)
			continue
		}
		privileges, object := strings.TrimSpace(upper[len("GRANT "):on]), strings.TrimSpace(line[on+len(" ON "):to])
		object = strings.TrimPrefix(strings.TrimPrefix(object, "TABLE "), "table ")
		if object == "*.*" {
			if privileges != "USAGE" {
				beyond = append(beyond, line)
			}
			continue
		}
		db, _, ok := strings.Cut(object, ".")
		if !ok || unquoteGrantDatabase(db) != database {
			beyond = append(beyond, line)
		}
	}
	return beyond
}

// unquoteGrantDatabase is the database a SHOW GRANTS line names:
// `my\_db` is my_db.
func unquoteGrantDatabase(s string) string {
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		s = strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	}
	return strings.NewReplacer(`\_`, "_", `\%`, "%").Replace(s)
}

// grantDatabase is database as GRANT … ON takes it: quoted, with the
// wildcards _ and % escaped, so that firedrill_x is not firedrillx too.
func grantDatabase(database string) string {
	return quoteIdent(strings.NewReplacer("_", `\_`, "%", `\%`).Replace(database))
}

// dropAccount drops the run's confined account, first killing any session
// of it still open, then frees its lock. A failure leaves it to the next
// run or 'firedrill restore' (the lock is free once this process ends).
func (tg *target) dropAccount(ctx context.Context) error {
	acct := tg.account
	if acct == nil {
		return nil
	}
	defer acct.lock.Close()
	admin, err := tg.plainHandle()
	if err != nil {
		return err
	}
	defer admin.Close()
	killSessions(ctx, admin, acct.name)
	if _, err := admin.ExecContext(ctx, "DROP USER IF EXISTS "+acct.String()); err != nil {
		return fmt.Errorf("drop the run's account %s on %s: %w\n"+
			"Run 'firedrill restore --dsn …' with the same server once it answers to remove it", acct, tg.cfg.Addr, connectHintIfNot(err))
	}
	tg.logf("after the run: dropped the account %s", acct)
	tg.account = nil
	return nil
}

// leaveAccount gives up the run's account on a server that stopped
// answering: it stays until the next run or 'firedrill restore' finds it
// without a session or lock and drops it.
func (tg *target) leaveAccount() error {
	acct := tg.account
	if acct == nil {
		return nil
	}
	acct.lock.Close()
	tg.account = nil
	return fmt.Errorf("the run's account %s is left on %s, which did not answer at the end of the run; "+
		"the next run, or 'firedrill restore --dsn …' once it answers, removes it", acct, tg.cfg.Addr)
}

// killSessions kills what sessions the account has left (an event's,
// closing); best effort: DROP USER goes on without.
func killSessions(ctx context.Context, admin *sql.DB, name string) {
	rows, err := admin.QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?", name)
	if err != nil {
		return
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	rows.Close()
	for _, id := range ids {
		_, _ = admin.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id))
	}
}

// dropLeftovers drops the accounts of runs that were killed (their lock
// free, no session of theirs left), and says what it dropped or why it
// could not look. A run still going, here or on another machine (a shard),
// holds its lock and is left alone.
func dropLeftovers(ctx context.Context, admin *sql.DB) []string {
	rows, err := admin.QueryContext(ctx, `SELECT User, Host FROM mysql.user WHERE User LIKE 'firedrill\_run\_%'`)
	if err != nil {
		if isPrivilegeError(err) {
			return nil // an account that cannot read mysql.user made none of them either
		}
		return []string{fmt.Sprintf("could not look for the accounts of killed runs: %v", err)}
	}
	type account struct{ name, host string }
	var found []account
	for rows.Next() {
		var a account
		if err := rows.Scan(&a.name, &a.host); err != nil {
			rows.Close()
			return []string{fmt.Sprintf("could not look for the accounts of killed runs: %v", err)}
		}
		if accountName.MatchString(a.name) {
			found = append(found, a)
		}
	}
	rows.Close()
	var out []string
	for _, a := range found {
		var free sql.NullInt64
		if err := admin.QueryRowContext(ctx, "SELECT IS_FREE_LOCK(?)", a.name).Scan(&free); err != nil || free.Int64 != 1 {
			continue // in use by a run, or unknown: left alone
		}
		var sessions int
		if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", a.name).Scan(&sessions); err != nil || sessions > 0 {
			continue
		}
		acct := quoteString(a.name) + "@" + quoteString(a.host)
		if _, err := admin.ExecContext(ctx, "DROP USER IF EXISTS "+acct); err != nil {
			out = append(out, fmt.Sprintf("could not drop the account %s of a killed run: %v", acct, err))
			continue
		}
		out = append(out, fmt.Sprintf("dropped the account %s of a killed run", acct))
	}
	return out
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on Linux
	}
	return hex.EncodeToString(b)
}

// quoteString quotes s as a MariaDB string literal.
func quoteString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// indent indents each line of s by four spaces.
func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = "    " + lines[i]
	}
	return strings.Join(lines, "\n")
}
