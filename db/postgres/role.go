package postgres

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/firedrill/firedrill/backend"
)

// On a given server firedrill confines by the server's own privileges, not
// only by reading the SQL: the user's DSN is the admin connection, used
// for firedrill's own fixed statements only, and everything the scenario
// wrote (setup SQL, pgbench's tables, workload scripts, sql and
// hold_transaction events) runs as a login role the run makes:
//
//   - a NOLOGIN group role (groupRole) owns firedrill's schema and every
//     object in it, and nothing else; it has no SUPERUSER, CREATEROLE,
//     CREATEDB, REPLICATION or BYPASSRLS and is a member of no role;
//   - each run (each shard of a split run) makes its own LOGIN role
//     firedrill_run_<hex> with a random password, a member of the group,
//     whose sessions SET ROLE to the group at connect (ALTER ROLE … SET
//     role), so that what one shard creates the others may use;
//   - the run holds one idle session as that role from creation to the
//     end, so that a role with no session at all is a dead run's: the
//     next run's Open and 'firedrill restore' drop those.
//
// What the role can still do is what PUBLIC can: read catalogs, call
// functions granted to PUBLIC (a user's SECURITY DEFINER function
// included), and on PostgreSQL 14 and older create objects in schema
// public; the outside-objects check says what changed.

// runRolePrefix names the login roles runs make, so that leftovers of
// killed runs are recognised; a hand-made --run-as account must not use it.
const runRolePrefix = "firedrill_run_"

// runRoleComment marks a login role made by a run (with which process).
const runRoleComment = "firedrill run login"

// groupRoleComment marks the group role firedrill made to own a schema: a
// role of that name without it is the user's, and left alone.
const groupRoleComment = "firedrill: owns the schema "

// keeperAppName tags the idle session that says the run's role is alive.
const keeperAppName = "firedrill-run-keeper"

// roleLockSQL and roleUnlockSQL serialize the making of roles on a
// server (a session-level advisory lock, keyed by a constant).
const (
	roleLockSQL   = "SELECT pg_advisory_lock(hashtext('firedrill roles'))"
	roleUnlockSQL = "SELECT pg_advisory_unlock(hashtext('firedrill roles'))"
)

// errCannotCreateRole is the admin DSN lacking CREATEROLE.
var errCannotCreateRole = errors.New("cannot create roles")

// groupRole is the NOLOGIN role that owns schema: firedrill_owner_<schema>,
// or with a hash of a schema name too long for a role's name.
func groupRole(schema string) string {
	name := "firedrill_owner_" + schema
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(schema))
	return "firedrill_owner_" + hex.EncodeToString(sum[:8])
}

// grantLogin is the login role the Grant text makes for --run-as.
func grantLogin(schema string) string {
	name := "firedrill_login_" + schema
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(schema))
	return "firedrill_login_" + hex.EncodeToString(sum[:8])
}

var _ backend.Granter = Backend{}

// Grant is the SQL an administrator runs by hand to make a confined
// account for --run-as, when the DSN firedrill is given cannot create
// roles: the group role owning schema, the schema, and a login role in
// the group (PASSWORD is a placeholder).
func (Backend) Grant(dsn, schema string) (string, error) {
	if schema == "" {
		schema = "firedrill"
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("connection settings: %w", err)
	}
	group, login := groupRole(schema), grantLogin(schema)
	var b strings.Builder
	fmt.Fprintf(&b, "-- as a superuser (or a role with CREATEROLE) on %s:%d, database %s:\n", cfg.Host, cfg.Port, cfg.Database)
	fmt.Fprintf(&b, "CREATE ROLE %s NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;\n", quoteIdent(group))
	fmt.Fprintf(&b, "COMMENT ON ROLE %s IS %s;\n", quoteIdent(group), quoteLiteral(groupRoleComment+schema))
	fmt.Fprintf(&b, "CREATE SCHEMA IF NOT EXISTS %s AUTHORIZATION %s;\n", quoteIdent(schema), quoteIdent(group))
	fmt.Fprintf(&b, "CREATE ROLE %s LOGIN PASSWORD 'PASSWORD' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS IN ROLE %s;\n",
		quoteIdent(login), quoteIdent(group))
	fmt.Fprintf(&b, "ALTER ROLE %s SET role = %s;\n", quoteIdent(login), quoteLiteral(group))
	// The password is named beside the URL, not in it: what firedrill
	// prints masks a URL's password slot, placeholder or not.
	fmt.Fprintf(&b, "-- then: firedrill run --dsn ADMIN-DSN --run-as 'postgres://%s@%s:%d/%s' (with the PASSWORD above after the user name, as user:PASSWORD@)\n",
		login, hostForURL(cfg.Host), cfg.Port, url.PathEscape(cfg.Database))
	return b.String(), nil
}

// hostForURL is a host as a URL writes it (a socket directory escaped).
func hostForURL(host string) string {
	if strings.HasPrefix(host, "/") {
		return url.QueryEscape(host)
	}
	return host
}

// runRole is the login role one run made, and the session that keeps it
// recognisably alive.
type runRole struct {
	name, password string
	group          string
	keeper         *pgconn.PgConn
}

// adminConn opens a session on the admin DSN for firedrill's own
// statements.
func adminConn(ctx context.Context, dsn, appName string) (*pgconn.PgConn, *pgconn.Config, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("connection settings: %w", err)
	}
	cfg.RuntimeParams["application_name"] = appName
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, cfg, fmt.Errorf("connect to %s:%d: %w\nIs the server running and accepting connections there? Check the scenario's target.dsn or --dsn, or remove them to use an embedded server.",
			cfg.Host, cfg.Port, err)
	}
	return conn, cfg, nil
}

// queryRows runs one statement with text parameters and returns its rows.
func queryRows(ctx context.Context, conn *pgconn.PgConn, sql string, params ...string) ([][]string, error) {
	values := make([][]byte, len(params))
	for i, p := range params {
		values[i] = []byte(p)
	}
	res := conn.ExecParams(ctx, sql, values, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, res.Err
	}
	rows := make([][]string, len(res.Rows))
	for i, r := range res.Rows {
		rows[i] = make([]string, len(r))
		for j, v := range r {
			rows[i][j] = string(v)
		}
	}
	return rows, nil
}

func execAll(ctx context.Context, conn *pgconn.PgConn, sql string) error {
	_, err := conn.Exec(ctx, sql).ReadAll()
	return err
}

// makeRunRole makes this run's login role on the admin connection: it
// drops dead runs' roles, makes (or checks) the group role and the
// schema it owns, then the login role, and connects the keeper session
// as it. An admin that cannot create roles gets errCannotCreateRole.
func (tg *target) makeRunRole(ctx context.Context, conn *pgconn.PgConn, cfg *pgconn.Config) (*runRole, error) {
	rows, err := queryRows(ctx, conn, `SELECT rolsuper, rolcreaterole FROM pg_catalog.pg_roles WHERE rolname = current_user`)
	if err != nil {
		return nil, fmt.Errorf("read the admin role's attributes: %w", err)
	}
	if len(rows) != 1 || (rows[0][0] != "t" && rows[0][1] != "t") {
		return nil, errCannotCreateRole
	}
	super := rows[0][0] == "t"
	// Shards of a split run open at once: one at a time makes the group
	// and the schema, and judges which roles are dead.
	if err := execAll(ctx, conn, roleLockSQL); err != nil {
		return nil, fmt.Errorf("wait for other runs making their roles: %w", err)
	}
	defer func() { _ = execAll(context.WithoutCancel(ctx), conn, roleUnlockSQL) }() // the session's end unlocks too
	dropped, err := dropDeadRunRoles(ctx, conn)
	for _, name := range dropped {
		tg.logf("before the run: dropped the role %s of a run that is gone", name)
	}
	if err != nil {
		return nil, err
	}
	group := groupRole(tg.schema)
	if err := ensureGroupRole(ctx, conn, group, tg.schema, super); err != nil {
		return nil, err
	}
	if err := tg.ensureSchema(ctx, conn, group); err != nil {
		return nil, err
	}
	r := &runRole{name: runRolePrefix + randomHex(8), password: randomHex(16), group: group}
	host, _ := os.Hostname()
	comment := fmt.Sprintf("%s: pid %d on %s at %s, schema %s", runRoleComment, os.Getpid(), host, time.Now().UTC().Format(time.RFC3339), tg.schema)
	create := fmt.Sprintf(`CREATE ROLE %[1]s LOGIN PASSWORD %[2]s NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT IN ROLE %[3]s;
COMMENT ON ROLE %[1]s IS %[4]s;
ALTER ROLE %[1]s SET role = %[5]s`, quoteIdent(r.name), quoteLiteral(scramVerifier(r.password)), quoteIdent(group), quoteLiteral(comment), quoteLiteral(group))
	if err := execAll(ctx, conn, create); err != nil {
		return nil, fmt.Errorf("create the run's role %s: %w", r.name, err)
	}
	// From here on the role exists: any failure drops it again.
	fail := func(err error) (*runRole, error) {
		if derr := dropRunRole(context.WithoutCancel(ctx), conn, r.name, group); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	grants := ""
	if !super {
		// A CREATEROLE admin acts on the role (terminate, REASSIGN) as a member.
		grants = fmt.Sprintf("GRANT %s TO CURRENT_USER;", quoteIdent(r.name))
	}
	ok, err := queryRows(ctx, conn, `SELECT has_database_privilege($1, current_database(), 'CONNECT')`, r.name)
	if err != nil {
		return fail(fmt.Errorf("check that %s may connect: %w", r.name, err))
	}
	if len(ok) == 1 && ok[0][0] != "t" {
		grants += fmt.Sprintf("GRANT CONNECT ON DATABASE %s TO %s;", quoteIdent(cfg.Database), quoteIdent(r.name))
	}
	if grants != "" {
		if err := execAll(ctx, conn, grants); err != nil {
			return fail(fmt.Errorf("grant to the run's role %s: %w", r.name, err))
		}
	}
	if tg.spec.Secret != nil {
		tg.spec.Secret(r.password)
	}
	kcfg, err := pgconn.ParseConfig(withUser(tg.connString, r.name, r.password))
	if err != nil {
		return fail(fmt.Errorf("connection settings: %w", err))
	}
	kcfg.RuntimeParams["application_name"] = keeperAppName
	if r.keeper, err = pgconn.ConnectConfig(ctx, kcfg); err != nil {
		return fail(fmt.Errorf("connect as the run's role %s to %s:%d: %w\n(pg_hba.conf must let a new role log in with its password: a line such as 'host %s all 127.0.0.1/32 scram-sha-256'; else make an account by hand, see 'firedrill grant', and pass --run-as)",
			r.name, cfg.Host, cfg.Port, err, cfg.Database))
	}
	tg.warnCreateOutside(ctx, conn, r.name)
	return r, nil
}

// warnCreateOutside says which other schemas the role may create objects
// in (public on PostgreSQL 14 and older, where PUBLIC has CREATE on it):
// the privileges cannot take that from one role alone.
func (tg *target) warnCreateOutside(ctx context.Context, conn *pgconn.PgConn, role string) {
	rows, err := queryRows(ctx, conn, `SELECT nspname FROM pg_catalog.pg_namespace
WHERE nspname <> $2 AND nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
  AND has_schema_privilege($1, oid, 'CREATE') ORDER BY 1`, role, tg.schema)
	if err != nil || len(rows) == 0 {
		return
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r[0]
	}
	tg.logf("warning: the run's role can create objects in the schema(s) %s (granted to PUBLIC; PostgreSQL 14 and older grant CREATE on public): "+
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC to prevent it; firedrill reports what appears there", strings.Join(names, ", "))
}

// ensureGroupRole makes the group role, or checks that the one there is
// firedrill's and still confined.
func ensureGroupRole(ctx context.Context, conn *pgconn.PgConn, group, schema string, super bool) error {
	rows, err := queryRows(ctx, conn, `SELECT rolcanlogin OR rolsuper OR rolcreaterole OR rolcreatedb OR rolreplication OR rolbypassrls,
       coalesce(shobj_description(oid, 'pg_authid'), ''),
       EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m WHERE m.member = r.oid)
FROM pg_catalog.pg_roles r WHERE rolname = $1`, group)
	if err != nil {
		return fmt.Errorf("look for the role %s: %w", group, err)
	}
	if len(rows) == 0 {
		q := fmt.Sprintf("CREATE ROLE %[1]s NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; COMMENT ON ROLE %[1]s IS %[2]s",
			quoteIdent(group), quoteLiteral(groupRoleComment+schema))
		if err := execAll(ctx, conn, q); err != nil {
			return fmt.Errorf("create the role %s that owns the schema %s: %w", group, schema, err)
		}
	} else {
		switch {
		case !strings.HasPrefix(rows[0][1], groupRoleComment):
			return fmt.Errorf("a role %s exists that firedrill did not make (its comment is not %q): firedrill will not take it; drop or rename it, or choose another setup.schema", group, groupRoleComment+schema)
		case rows[0][0] == "t" || rows[0][2] == "t":
			return fmt.Errorf("the role %s, which owns firedrill's schema, has been given LOGIN, SUPERUSER, CREATEROLE, CREATEDB, REPLICATION, BYPASSRLS or membership in another role: firedrill will not run as it; "+
				"ALTER ROLE %s NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS and revoke its memberships", group, group)
		}
	}
	if !super {
		// CREATE SCHEMA … AUTHORIZATION and ALTER … OWNER TO need membership.
		if err := execAll(ctx, conn, fmt.Sprintf("GRANT %s TO CURRENT_USER", quoteIdent(group))); err != nil {
			return fmt.Errorf("grant %s to the admin role: %w", group, err)
		}
	}
	return nil
}

// ensureSchema makes firedrill's schema, owned by group. A schema an
// older firedrill made (owned by the admin) is handed to group with the
// objects in it; one owned by anyone else is refused.
func (tg *target) ensureSchema(ctx context.Context, conn *pgconn.PgConn, group string) error {
	rows, err := queryRows(ctx, conn, `SELECT r.rolname, r.rolname = current_user FROM pg_catalog.pg_namespace n
JOIN pg_catalog.pg_roles r ON r.oid = n.nspowner WHERE n.nspname = $1`, tg.schema)
	if err != nil {
		return fmt.Errorf("look for the schema %s: %w", tg.schema, err)
	}
	switch {
	case len(rows) == 0:
		if err := execAll(ctx, conn, fmt.Sprintf("CREATE SCHEMA %s AUTHORIZATION %s", quoteIdent(tg.schema), quoteIdent(group))); err != nil {
			return fmt.Errorf("create the schema %s: %w", tg.schema, err)
		}
		return nil
	case rows[0][0] == group:
		return nil
	case rows[0][1] != "t":
		return fmt.Errorf("the schema %s belongs to %s: firedrill runs only in a schema its role %s owns; "+
			"ALTER SCHEMA %s OWNER TO %s (and its objects) if it is firedrill's, or choose another setup.schema",
			tg.schema, rows[0][0], group, tg.schema, group)
	}
	tg.logf("before the run: handing the schema %s and its objects to the role %s", tg.schema, group)
	return handOver(ctx, conn, tg.schema, group)
}

// handOverSQL lists the statements that give the objects of schema $1
// owned by the current user (an older firedrill's) to the role $2: tables,
// views, sequences not owned by a column, routines, types.
const handOverSQL = `SELECT format('ALTER %s %s OWNER TO %I',
         CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'S' THEN 'SEQUENCE'
                        WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, c.oid::regclass, $2)
FROM pg_catalog.pg_class c
WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1)
  AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND pg_has_role(c.relowner, current_user, 'USAGE')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
UNION ALL
SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, $2)
FROM pg_catalog.pg_proc p
WHERE p.pronamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND pg_has_role(p.proowner, current_user, 'USAGE')
UNION ALL
SELECT format('ALTER TYPE %s OWNER TO %I', t.oid::regtype, $2)
FROM pg_catalog.pg_type t
WHERE t.typnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = $1) AND pg_has_role(t.typowner, current_user, 'USAGE')
  AND t.typtype IN ('c', 'd', 'e', 'r') AND (t.typrelid = 0 OR (SELECT relkind FROM pg_catalog.pg_class WHERE oid = t.typrelid) = 'c')
  AND t.typelem = 0`

func handOver(ctx context.Context, conn *pgconn.PgConn, schema, group string) error {
	rows, err := queryRows(ctx, conn, handOverSQL, schema, group)
	if err != nil {
		return fmt.Errorf("list the objects of the schema %s: %w", schema, err)
	}
	stmts := []string{fmt.Sprintf("ALTER SCHEMA %s OWNER TO %s", quoteIdent(schema), quoteIdent(group))}
	for _, r := range rows {
		stmts = append(stmts, r[0])
	}
	for _, s := range stmts {
		if err := execAll(ctx, conn, s); err != nil {
			return fmt.Errorf("hand the schema %s to %s: %s: %w", schema, group, s, err)
		}
	}
	return nil
}

// dropRunRole ends the role's sessions and drops it with what it owns
// (handed to the group first, so that a shard's tables stay for the
// others).
func dropRunRole(ctx context.Context, conn *pgconn.PgConn, name, group string) error {
	if _, err := queryRows(ctx, conn, `SELECT pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity WHERE usename = $1 AND pid <> pg_backend_pid()`, name); err != nil {
		return fmt.Errorf("end the sessions of the run's role %s: %w", name, err)
	}
	reassign := ""
	if group != "" {
		reassign = fmt.Sprintf("REASSIGN OWNED BY %s TO %s; ", quoteIdent(name), quoteIdent(group))
	}
	q := fmt.Sprintf("%sDROP OWNED BY %[2]s; DROP ROLE %[2]s", reassign, quoteIdent(name))
	var err error
	for try := 0; try < 20; try++ { // a terminated backend takes a moment to go
		if err = execAll(ctx, conn, q); err == nil {
			return nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55006" { // object_in_use: a session still there
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("drop the run's role %s: %w", name, err)
}

// deadRunRolesSQL finds the login roles of runs that are gone: named and
// commented as runs make them, with no session at all (a live run keeps
// one), and the group that each belongs to.
const deadRunRolesSQL = `SELECT r.rolname, coalesce((SELECT g.rolname FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
                                 WHERE m.member = r.oid AND g.rolname LIKE 'firedrill\_owner\_%' LIMIT 1), '')
FROM pg_catalog.pg_roles r
WHERE r.rolname LIKE 'firedrill\_run\_%' AND shobj_description(r.oid, 'pg_authid') LIKE '` + runRoleComment + `%'
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a WHERE a.usesysid = r.oid)
ORDER BY 1`

// dropDeadRunRoles drops the roles of killed runs, and says which.
func dropDeadRunRoles(ctx context.Context, conn *pgconn.PgConn) ([]string, error) {
	rows, err := queryRows(ctx, conn, deadRunRolesSQL)
	if err != nil {
		return nil, fmt.Errorf("look for roles of killed runs: %w", err)
	}
	var dropped []string
	for _, r := range rows {
		if err := dropRunRole(ctx, conn, r[0], r[1]); err != nil {
			return dropped, err
		}
		dropped = append(dropped, r[0])
	}
	return dropped, nil
}

// DropDeadRunRoles drops, on the server at dsn, the login roles of runs
// that were killed, and says which ('firedrill restore').
func DropDeadRunRoles(ctx context.Context, dsn string) ([]string, error) {
	conn, _, err := adminConn(ctx, dsn, "firedrill-restore")
	if err != nil {
		return nil, err
	}
	defer closeQuietly(conn)
	if err := execAll(ctx, conn, roleLockSQL); err != nil {
		return nil, fmt.Errorf("wait for runs making their roles: %w", err)
	}
	return dropDeadRunRoles(ctx, conn)
}

// close drops the run's role: the keeper session first, so that nothing
// of this run stays logged in as it.
// leave lets go of the role without dropping it (its server does not
// answer): the next run or 'firedrill restore' finds it without a session.
func (r *runRole) leave() {
	if r.keeper != nil {
		closeQuietly(r.keeper)
	}
}

func (r *runRole) close(dsn string, wait time.Duration) error {
	if r.keeper != nil {
		closeQuietly(r.keeper)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, _, err := adminConn(ctx, dsn, "firedrill-setup")
	if err != nil {
		return fmt.Errorf("drop the run's role %s: %w", r.name, err)
	}
	defer closeQuietly(conn)
	return dropRunRole(ctx, conn, r.name, r.group)
}

// checkRunAs checks a --run-as account before the run: it must be
// confined (no SUPERUSER, CREATEROLE, CREATEDB, REPLICATION, BYPASSRLS,
// nor a predefined role that reaches outside), and may create in schema.
func checkRunAs(ctx context.Context, runAs, schema string) error {
	conn, cfg, err := adminConn(ctx, runAs, "firedrill-setup")
	if err != nil {
		return fmt.Errorf("--run-as: %w", err)
	}
	defer closeQuietly(conn)
	rows, err := queryRows(ctx, conn, `SELECT r.rolsuper OR r.rolcreaterole OR r.rolcreatedb OR r.rolreplication OR r.rolbypassrls,
       coalesce((SELECT string_agg(p.rolname, ', ') FROM pg_catalog.pg_roles p
                 WHERE p.rolname IN ('pg_execute_server_program', 'pg_write_server_files', 'pg_read_server_files', 'pg_signal_backend', 'pg_write_all_data')
                   AND pg_has_role(r.oid, p.oid, 'MEMBER')), ''),
       coalesce(has_schema_privilege(current_user, $1, 'CREATE'), false)
FROM pg_catalog.pg_roles r WHERE r.rolname = session_user`, schema)
	if err != nil {
		return fmt.Errorf("--run-as: read the account's attributes: %w", err)
	}
	if len(rows) != 1 {
		return fmt.Errorf("--run-as: the account %s is not in pg_roles", cfg.User)
	}
	switch {
	case rows[0][0] == "t":
		return fmt.Errorf("--run-as: the account %s is not confined (SUPERUSER, CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS): make one with 'firedrill grant'", cfg.User)
	case rows[0][1] != "":
		return fmt.Errorf("--run-as: the account %s is a member of %s, which reach outside firedrill's schema: make one with 'firedrill grant'", cfg.User, rows[0][1])
	case rows[0][2] != "t":
		return fmt.Errorf("--run-as: the account %s cannot create objects in the schema %s (does it exist? is it owned by the account's group?): make one with 'firedrill grant'", cfg.User, schema)
	}
	return nil
}

// withUser is dsn with another user and password: a URL's user info is
// replaced; a key=value string gets later keys, which win.
func withUser(dsn, user, password string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.User = url.UserPassword(user, password)
		q := u.Query()
		q.Del("user")
		q.Del("password")
		q.Del("passfile")
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " user=" + quoteConnValue(user) + " password=" + quoteConnValue(password)
}

// quoteConnValue quotes a key=value connection string's value.
func quoteConnValue(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error()) // the system's randomness is gone: nothing is safe to make
	}
	return hex.EncodeToString(b)
}

// scramVerifier is the SCRAM-SHA-256 verifier of password (RFC 5803, as
// PostgreSQL stores it), so that the password itself is never sent in
// CREATE ROLE (nor left in a server log of statements).
func scramVerifier(password string) string {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	const iterations = 4096
	// PBKDF2-HMAC-SHA256 with one block: the key is as long as a hash.
	mac := hmac.New(sha256.New, []byte(password))
	mac.Write(salt)
	mac.Write([]byte{0, 0, 0, 1})
	u := mac.Sum(nil)
	salted := append([]byte(nil), u...)
	for i := 1; i < iterations; i++ {
		mac.Reset()
		mac.Write(u)
		u = mac.Sum(u[:0])
		for j := range salted {
			salted[j] ^= u[j]
		}
	}
	keyed := func(key []byte, msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := keyed(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	serverKey := keyed(salted, "Server Key")
	enc := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, enc(salt), enc(stored[:]), enc(serverKey))
}
