package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/redis/redisconn"
	"github.com/firedrill/firedrill/db/redis/redisevent"
)

var _ backend.Granter = Backend{}

// On a given server (unless --allow-outside-schema) setup, workloads and
// command events run as an ACL user that the server itself confines to
// firedrill's keys: the run makes one (firedrill_run_<hex>, a random
// password no one sees) with the admin URL and removes it at Close, or
// takes one an administrator made from Grant's text (--run-as).
const (
	// runUserPrefix names the ACL users runs make, so that a later run or
	// `firedrill restore` knows a killed run's leftover.
	runUserPrefix = "firedrill_run_"
	// holdPrefix names the admin connection that marks a run's ACL user
	// as live (CLIENT SETNAME firedrill-acl:<user>) from before the user
	// exists until the run ends: a sweep by another process of a sharded
	// run, between ACL SETUSER and the user's first connection, then
	// sees it in CLIENT LIST.
	holdPrefix = "firedrill-acl:"
	// grantUser is the name Grant gives the user an administrator makes
	// by hand; not runUserPrefix's, so that no sweep removes it.
	grantUser = "firedrill"
	// aclWait bounds making the user, and removing it at Close.
	aclWait = 30 * time.Second
)

// confinedRules are the ACL rules of firedrill's confined user on a server
// of version whose URL names database db. Keys and channels: firedrill:*
// only, so that COPY … DB n, RENAME or a Lua script naming the user's key
// is refused by the server. Commands: all but @admin and @dangerous (CONFIG,
// FLUSHALL, DEBUG, SHUTDOWN, CLIENT KILL, ACL SETUSER, KEYS, SWAPDB,
// MIGRATE, SORT …), MOVE, SELECT of another database than db (Redis's
// first-argument rule: the confined session must still SELECT db to reach
// firedrill's keys there), SCRIPT but LOAD and EXISTS (FLUSH empties the
// application's script cache, KILL stops its script) and, from Redis 7,
// FUNCTION but LIST (LOAD, DELETE, FLUSH and RESTORE change the
// application's libraries). Redis applies the same rules to the commands
// Lua scripts and functions call.
func confinedRules(version string, db int) []string {
	rules := []string{"~" + redisevent.KeyPrefix + "*"}
	if versionAtLeast(version, 6, 2) { // Redis 6.0 has no channel rules
		rules = append(rules, "resetchannels", "&"+redisevent.KeyPrefix+"*")
	}
	rules = append(rules, "+@all", "-@admin", "-@dangerous",
		"-select", "+select|"+strconv.Itoa(db), "-swapdb", "-move", "-flushdb", "-flushall", "-keys", "-migrate",
		"-script", "+script|load", "+script|exists")
	if versionAtLeast(version, 7, 0) { // FUNCTION came with 7.0
		rules = append(rules, "-function", "+function|list")
	}
	return rules
}

// versionAtLeast says whether a Redis version ("7.0.15") is major.minor
// or later; an unreadable one counts as the newest.
func versionAtLeast(version string, major, minor int) bool {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return true
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > major || ma == major && mi >= minor
}

// Grant is the ACL SETUSER an administrator runs once to make a confined
// user by hand for the server at dsn, for an admin URL that may not make
// one itself; the user is then given to runs with --run-as. schema is
// PostgreSQL's notion: Redis's namespace is the key prefix firedrill:.
func (Backend) Grant(dsn, _ string) (string, error) {
	cfg, err := redisconn.ParseURL(dsn)
	if err != nil {
		return "", fmt.Errorf("grant: --dsn: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# As an administrator of the Redis server at %s (redis-cli), once:\n", cfg.Where())
	fmt.Fprintf(&b, "ACL SETUSER %s reset on >PASSWORD %s\n", grantUser, strings.Join(confinedRules("", cfg.DB), " "))
	b.WriteString("# Redis 6.2: leave out -function +function|list; Redis 6.0: leave out resetchannels &firedrill:* too.\n")
	b.WriteString("# With an aclfile, ACL SAVE keeps the user across restarts.\n")
	// The password is named beside the URL, not in it: what firedrill
	// prints masks a URL's password slot, placeholder or not.
	fmt.Fprintf(&b, "# Then run with --run-as %s (with the PASSWORD above after the user name, as user:PASSWORD@)\n", runAsURL(dsn, cfg, grantUser, ""))
	return b.String(), nil
}

// runAsURL is dsn with the given user and password in place of its own
// (for --run-as hints and shell events' FIREDRILL_CONNSTRING); without a
// password, the user alone.
func runAsURL(dsn string, cfg redisconn.Config, user, password string) string {
	userinfo := url.UserPassword(user, password)
	if password == "" {
		userinfo = url.User(user)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "redis://" + userinfo.String() + "@" + cfg.Where()
	}
	u.User = userinfo
	q := u.Query()
	if q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// runAsConfig is how the confined sessions reach the server with --run-as:
// the run-as URL's user and password, which must name the admin URL's
// server and database (firedrill's keys live there).
func runAsConfig(admin redisconn.Config, runAs string) (redisconn.Config, error) {
	cfg, err := redisconn.ParseURL(runAs)
	if err != nil {
		return redisconn.Config{}, fmt.Errorf("--run-as: %w", err)
	}
	if cfg.Addr != admin.Addr || cfg.DB != admin.DB {
		return redisconn.Config{}, fmt.Errorf("--run-as names %s database %d, but --dsn %s database %d: give the same server and database, with the confined user's name and password",
			cfg.Where(), cfg.DB, admin.Where(), admin.DB)
	}
	work := admin
	work.User, work.Password = cfg.User, cfg.Password
	return work, nil
}

// confine makes the run's confined ACL user with the admin connection,
// after removing the leftovers of killed runs, and points tg.work at it;
// the admin connection stays open, named after the user, until Close.
// An admin that may not (NOPERM, or a Redis without ACLs) fails the run
// before anything ran, with what an administrator runs instead.
func (tg *target) confine(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, aclWait)
	defer cancel()
	hold, err := tg.dial(ctx, "")
	if err != nil {
		return fmt.Errorf("confine: %w", err)
	}
	version := ""
	if r, err := hold.Do(ctx, "INFO", "server"); err == nil {
		version = infoField(r.Text(), "redis_version")
	}
	if err := sweepRunUsers(ctx, hold, tg.logf); err != nil {
		hold.Close()
		return tg.cannotConfine(err)
	}
	user, password := runUserPrefix+randomHex(8), randomHex(24)
	if tg.spec.Secret != nil {
		tg.spec.Secret(password)
	}
	if _, err := hold.Do(ctx, "CLIENT", "SETNAME", holdPrefix+user); err != nil {
		hold.Close()
		return tg.cannotConfine(fmt.Errorf("CLIENT SETNAME: %w", err))
	}
	setuser := append([]string{"ACL", "SETUSER", user, "reset", "on", ">" + password}, confinedRules(version, tg.conn.DB)...)
	if _, err := hold.Do(ctx, setuser...); err != nil {
		hold.Close()
		return tg.cannotConfine(fmt.Errorf("ACL SETUSER: %w", err))
	}
	tg.hold, tg.runUser = hold, user
	tg.work.User, tg.work.Password = user, password
	tg.logf("confined: setup, workloads and command events run as the ACL user %s (keys firedrill:* only, no admin or dangerous commands), removed after the run", user)
	return nil
}

// cannotConfine is the error of an admin URL that cannot make the
// confined user: a reply of the server (NOPERM, unknown command) says
// what an administrator runs instead; a lost connection is itself.
func (tg *target) cannotConfine(err error) error {
	var refused *redisconn.Error
	if !errors.As(err, &refused) {
		return fmt.Errorf("confine: %w", err)
	}
	grant, _ := Backend{}.Grant(backend.GivenDSN(tg.spec), "")
	return fmt.Errorf("redis at %s: the --dsn user cannot make firedrill's confined ACL user (%v; Redis 6 or later and the ACL command are needed).\n"+
		"On a given server firedrill runs setup, workloads and command events as an ACL user that reaches only the keys firedrill:*.\n"+
		"Have an administrator make one, and pass it with --run-as:\n\n%s\n\n"+
		"Or pass --allow-outside-schema to run everything as the --dsn user (then nothing but the lexical check keeps the scenario off your keys).",
		tg.conn.Where(), err, indent(grant))
}

// indent indents text's lines for an error message.
func indent(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return "  " + strings.Join(lines, "\n  ")
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// sweepRunUsers removes the ACL users of runs that ended without removing
// them (killed): a firedrill_run_ user with no client in CLIENT LIST,
// neither authenticated as it nor the admin connection that holds it
// (another process's run, live, keeps its own). It logs each one.
func sweepRunUsers(ctx context.Context, c *redisconn.Conn, logf func(string, ...any)) error {
	users, err := c.Do(ctx, "ACL", "USERS")
	if err != nil {
		return fmt.Errorf("ACL USERS: %w", err)
	}
	var ours []string
	for _, u := range users.Strings() {
		if strings.HasPrefix(u, runUserPrefix) {
			ours = append(ours, u)
		}
	}
	if len(ours) == 0 {
		return nil
	}
	// CLIENT LIST after ACL USERS: a user made meanwhile is not in ours,
	// and one made before has its holder named already.
	list, err := c.Do(ctx, "CLIENT", "LIST")
	if err != nil {
		return fmt.Errorf("CLIENT LIST: %w", err)
	}
	live := map[string]bool{}
	for _, client := range redisevent.ParseClientList(list.Text()) {
		live[client["user"]] = true
		if u, ok := strings.CutPrefix(client["name"], holdPrefix); ok {
			live[u] = true
		}
	}
	slices.Sort(ours)
	for _, u := range ours {
		if live[u] {
			continue
		}
		if _, err := c.Do(ctx, "ACL", "DELUSER", u); err != nil {
			return fmt.Errorf("ACL DELUSER %s: %w", u, err)
		}
		logf("removed the ACL user %s, left by a run that did not end (killed?)", u)
	}
	return nil
}

// dropRunUser removes the run's ACL user (ACL DELUSER also disconnects
// its clients) and closes the connection that held it. A server that
// does not answer keeps it: the next run or `firedrill restore` removes
// it, which the log says; it can reach only firedrill's keys.
// leaveRunUser lets go of the run's ACL user on a server that did not
// answer at the end: the next run or 'firedrill restore' finds it without
// a client and removes it.
func (tg *target) leaveRunUser() {
	if tg.runUser == "" {
		return
	}
	tg.hold.Close()
	tg.logf("the run's ACL user %s is left on the server, which did not answer at the end of the run (the next run, or `firedrill restore --dsn …`, removes it)", tg.runUser)
}

func (tg *target) dropRunUser(wait time.Duration) {
	if tg.runUser == "" {
		return
	}
	defer tg.hold.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := tg.dial(ctx, "firedrill-acl")
	if err == nil {
		_, err = c.Do(ctx, "ACL", "DELUSER", tg.runUser)
		c.Close()
	}
	if err != nil {
		tg.logf("could not remove the run's ACL user %s: %v (the next run, or `firedrill restore --dsn …`, removes it)", tg.runUser, err)
		return
	}
	tg.logf("removed the run's ACL user %s", tg.runUser)
}

// openConfined chooses, on a given server, who setup, workloads and
// command events run as: the --run-as user, the admin URL's own user
// with --allow-outside-schema, or a confined user the run makes.
func (tg *target) openConfined(ctx context.Context) error {
	if c, err := tg.dial(ctx, "firedrill-restore"); err == nil {
		redisevent.NoteLegacyRecord(ctx, c, tg.logf)
		c.Close()
	}
	switch {
	case tg.spec.RunAs != "":
		work, err := runAsConfig(tg.conn, tg.spec.RunAs)
		if err != nil {
			return err
		}
		if tg.spec.Secret != nil && work.Password != "" {
			tg.spec.Secret(work.Password)
		}
		tg.work = work
		tg.logf("confined: setup, workloads and command events run as the --run-as user %s", work.User)
		return nil
	case tg.spec.AllowOutsideSchema:
		return nil
	}
	return tg.confine(ctx)
}

// failures collects errors from the events' goroutines.
type failures struct {
	mu   sync.Mutex
	errs []error
}

// add records one.
func (f *failures) add(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err)
}

// err is every one recorded, joined; nil when none.
func (f *failures) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}
