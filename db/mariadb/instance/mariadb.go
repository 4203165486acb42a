package mariadb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/firedrill/firedrill/instance/serverproc"
	"github.com/firedrill/firedrill/internal/slowdisk"
)

const (
	// user is the database user clients authenticate as, with every privilege.
	user = "firedrill"
	// database is the database created for the run.
	database = "firedrill"
	// dirPrefix names every MariaDB instance directory in the temp dir, so
	// that stale ones can be found.
	dirPrefix = "firedrill-mdb-"
	// Files inside the instance directory.
	dataDirName  = "data"
	logFileName  = "server.log"
	confFileName = "my.cnf" // the only option file the server reads, rewritten at every start
	socketName   = "mysqld.sock"
	pidFileName  = "mariadbd.pid"
	tmpDirName   = "tmp"      // the server's temporary files: TMPDIR may be a directory its user cannot write
	initFileName = "init.sql" // the run's database and user, read by mariadb-install-db, then removed
	// readyWait bounds how long a start waits for the first connection; it
	// includes crash recovery after a kill.
	readyWait = 60 * time.Second
	// installWait bounds mariadb-install-db (several seconds on a busy machine).
	installWait = 3 * time.Minute
	// portAttempts bounds the retries when another process takes the
	// chosen port between probing it and the server binding it.
	portAttempts = 5
)

// managedSettings are chosen by the instance itself (on mariadbd's command
// line, which wins over the option file); overriding them would break the
// accessors or reach outside the instance directory.
var managedSettings = []string{
	"port", "socket", "datadir", "pid_file", "bind_address", "log_error", "basedir",
	"tmpdir", "user", "skip_networking", "skip_grant_tables", "skip_name_resolve", "defaults_file", "defaults_extra_file",
}

// Options configure a throwaway server.
type Options struct {
	// Settings are server options as in my.cnf's [mariadbd] group, e.g.
	// {"innodb_autoinc_lock_mode": "2", "query_cache_type": "1"}; "" is a
	// bare option (skip_log_bin).
	Settings map[string]string
	BinDir   string    // where mariadbd and mariadb-install-db are; "" = discover
	Progress io.Writer // short human progress lines ("starting MariaDB 10.11.19 on …"); nil = silent
	// SlowDisk builds firedrill's slow-disk library (internal/slowdisk)
	// and starts mariadbd with it preloaded, so that Instance.SlowDisk can
	// make its syncs slow (the slow mode of disk_pressure): InnoDB's redo
	// log and data file flushes go through fsync/fdatasync.
	SlowDisk bool
}

// Instance is a running throwaway MariaDB server that owns a private temp
// directory (data, socket, option file, log); Stop removes all of it.
type Instance struct {
	dir      string // the temp dir: owner file, option file, log, socket, pid file, data dir
	dataDir  string
	logPath  string
	bins     binaries
	version  string
	port     int
	password string
	runAs    *syscall.Credential // nil: run as the current user
	progress io.Writer
	life     *serverproc.Lifecycle // the server, its settings, Restart and Stop
	env      []string              // added to mariadbd's environment (the slow-disk library)
	slowDisk slowdisk.Control      // "" without Options.SlowDisk
}

// Start creates, configures and starts a throwaway server, and returns once
// it accepts connections. On error nothing it created is left behind.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	settings, err := normalizeSettings(opts.Settings)
	if err != nil {
		return nil, err
	}
	inst := &Instance{progress: opts.Progress}
	if inst.bins, err = findBinaries(opts.BinDir); err != nil {
		return nil, err
	}
	if inst.version, err = serverVersion(ctx, inst.bins.server); err != nil {
		return nil, err
	}
	if inst.runAs, err = serverproc.Credential(ctx, "MariaDB", inst.say); err != nil {
		return nil, err
	}
	startSettings := defaultSettings()
	if on := strings.ToUpper(settings["performance_schema"]); on == "ON" || on == "1" {
		maps.Copy(startSettings, statementHistory())
	}
	maps.Copy(startSettings, settings)
	inst.life = serverproc.NewLifecycle(startSettings)
	if inst.password, err = newPassword(); err != nil {
		return nil, err
	}
	if inst.dir, err = reaper().NewDir(inst.say); err != nil {
		return nil, err
	}
	inst.dataDir = filepath.Join(inst.dir, dataDirName)
	inst.logPath = filepath.Join(inst.dir, logFileName)
	if opts.SlowDisk {
		inst.slowDisk = slowdisk.ControlIn(inst.dataDir)
	}
	if err := inst.create(ctx); err != nil {
		return nil, errors.Join(err, inst.Stop())
	}
	return inst, nil
}

// create fills the fresh instance directory and starts the server.
func (i *Instance) create(ctx context.Context) error {
	if err := serverproc.WriteOwnerFile(i.dir); err != nil {
		return err
	}
	if err := serverproc.CheckSocketPath(i.Socket()); err != nil {
		return err
	}
	if err := serverproc.HandOver(i.dir, i.runAs); err != nil {
		return err
	}
	if err := i.mkdirOwned(filepath.Join(i.dir, tmpDirName)); err != nil {
		return err
	}
	if i.slowDisk != "" {
		// In the instance directory, so that it goes with the server and
		// is reaped with it after a kill. mariadb-install-db runs without
		// it: only the server's syncs are to be slowed.
		lib, err := slowdisk.Build(ctx, i.dir)
		if err != nil {
			return err
		}
		i.env = slowdisk.Env(lib, i.slowDisk)
	}
	return i.life.Start(func(settings map[string]string) error {
		// The option file is read by mariadb-install-db too: settings such as
		// innodb_page_size only take effect when the files are created.
		if err := writeConfig(filepath.Join(i.dir, confFileName), settings); err != nil {
			return err
		}
		if err := i.install(ctx); err != nil {
			return err
		}
		err := serverproc.OnFreePort(portAttempts, i.say, func(port int) error {
			i.port = port
			i.say("starting MariaDB %s on %s (socket in %s%s)…", i.version, i.TCPAddr(), i.dir, serverproc.RunsAsNote(i.runAs))
			return i.launch(ctx, settings)
		})
		if err != nil {
			return err
		}
		i.say("started MariaDB %s on %s", i.version, i.TCPAddr())
		return nil
	})
}

// install runs mariadb-install-db: the system tables, then the run's
// database and its user with a password (mysql_native_password, which
// every MySQL client speaks), from a file that is removed afterwards.
// root keeps Debian's default: unix_socket authentication only.
func (i *Instance) install(ctx context.Context) error {
	i.say("mariadb-install-db %s…", i.dataDir)
	initPath := filepath.Join(i.dir, initFileName)
	if err := i.writeOwned(initPath, initSQL(i.password), 0o600); err != nil {
		return err
	}
	defer os.Remove(initPath)
	logFile, err := os.OpenFile(i.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create server log %s: %w", i.logPath, err)
	}
	defer logFile.Close()
	cmd := exec.Command(i.bins.install,
		"--defaults-file="+filepath.Join(i.dir, confFileName),
		"--datadir="+i.dataDir,
		"--tmpdir="+filepath.Join(i.dir, tmpDirName),
		"--skip-test-db", "--skip-name-resolve",
		"--extra-file="+initPath)
	cmd.Dir = i.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = serverproc.ProcAttr(i.runAs, syscall.SIGKILL)
	process, err := serverproc.Spawn(cmd)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", installProgram, i.dataDir, err)
	}
	timer := time.NewTimer(installWait)
	defer timer.Stop()
	select {
	case <-process.Exited():
		err = process.Err()
	case <-ctx.Done():
		err = ctx.Err()
	case <-i.life.Stopping():
		err = errors.New("stopped while installing")
	case <-timer.C:
		err = fmt.Errorf("did not finish in %v", installWait)
	}
	if process.Running() {
		// The script's bootstrap server is in its process group.
		process.KillGroup()
		<-process.Exited()
	}
	if err != nil {
		return fmt.Errorf("%s in %s: %w\n%s", installProgram, i.dataDir, err, installErrors(i.logPath))
	}
	return nil
}

// initSQL creates the run's database and user. The bootstrap server runs
// without grant tables, which FLUSH PRIVILEGES loads so that CREATE USER
// works; CREATE OR REPLACE also takes over the socket-only account
// mariadb-install-db makes for the OS user it runs as, when that is named
// firedrill too.
func initSQL(password string) string {
	var b strings.Builder
	b.WriteString("FLUSH PRIVILEGES;\n")
	fmt.Fprintf(&b, "CREATE DATABASE IF NOT EXISTS %s;\n", quoteIdent(database))
	for _, host := range []string{"localhost", "127.0.0.1"} {
		account := quoteString(user) + "@" + quoteString(host)
		fmt.Fprintf(&b, "CREATE OR REPLACE USER %s IDENTIFIED VIA mysql_native_password USING PASSWORD(%s);\n",
			account, quoteString(password))
		fmt.Fprintf(&b, "GRANT ALL PRIVILEGES ON *.* TO %s WITH GRANT OPTION;\n", account)
	}
	return b.String()
}

// launch writes the option file for settings, starts mariadbd and waits
// until it accepts connections. On error the server is gone. Called from
// the lifecycle's Start or Restart.
func (i *Instance) launch(ctx context.Context, settings map[string]string) error {
	confPath := filepath.Join(i.dir, confFileName)
	if err := writeConfig(confPath, settings); err != nil {
		return err
	}
	// The probe connects as the run's user.
	cfg := i.clientConfig("unix")
	cfg.Timeout = 5 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return fmt.Errorf("start mariadbd in %s: client settings: %w", i.dataDir, err)
	}
	// --defaults-file first (mariadbd insists): no option file of the
	// machine is read. The managed options follow on the command line,
	// which wins over the file.
	cmd := exec.Command(i.bins.server,
		"--defaults-file="+confPath,
		"--datadir="+i.dataDir,
		"--socket="+i.Socket(),
		"--pid-file="+filepath.Join(i.dir, pidFileName),
		"--port="+strconv.Itoa(i.port),
		"--bind-address=127.0.0.1",
		"--log-error="+i.logPath,
		"--tmpdir="+filepath.Join(i.dir, tmpDirName),
		"--skip-name-resolve")
	cmd.Dir = i.dir
	if len(i.env) > 0 {
		cmd.Env = append(os.Environ(), i.env...)
	}
	// SIGKILL: the data is thrown away with the directory, so the quickest
	// end is the right one when firedrill dies.
	cmd.SysProcAttr = serverproc.ProcAttr(i.runAs, syscall.SIGKILL)
	return i.life.Launch(ctx, serverproc.Launch{
		Cmd:       cmd,
		LogPath:   i.logPath,
		SpawnWhat: "mariadbd in " + i.dataDir,
		What:      "mariadbd in " + i.dataDir,
		Port:      i.port,
		PortTaken: []string{"Address already in use", "Bind on TCP/IP port"},
		Probe: func(ctx context.Context) error {
			conn, err := connector.Connect(ctx)
			if err != nil {
				return err
			}
			// The probe has done its job; a failure to say goodbye on a
			// fresh connection says nothing about the server.
			_ = conn.Close()
			return nil
		},
		ProbeName: "connection attempt",
		Poll:      50 * time.Millisecond,
		ReadyWait: readyWait,
		Abort:     stopSteps(),
	})
}

// clientConfig is how the run's user reaches the server over network
// ("tcp" or "unix").
func (i *Instance) clientConfig(network string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = user, i.password, database
	cfg.Logger = &mysql.NopLogger{} // the driver's own complaints (a dropped idle connection) are not the run's
	cfg.Net, cfg.Addr = "tcp", i.TCPAddr()
	if network == "unix" {
		cfg.Net, cfg.Addr = "unix", i.Socket()
	}
	return cfg
}

// stopSteps stop mariadbd: a normal shutdown (with the default
// innodb_fast_shutdown=1 it writes a checkpoint, seconds after a heavy
// run), then SIGKILL.
func stopSteps() []serverproc.Step {
	return []serverproc.Step{
		{Signal: syscall.SIGTERM, Wait: 60 * time.Second},
		{Signal: syscall.SIGKILL, Wait: 5 * time.Second},
	}
}

// Restart stops the server (normal shutdown), merges settings into the
// current ones and starts it again on the same port and data directory,
// so that a run can change options that cannot be changed while it runs
// (innodb_autoinc_lock_mode, innodb_buffer_pool_instances …). What SET
// GLOBAL changed is lost, as on any MariaDB restart. If the server does not
// come back, the error carries the server log tail, the merged settings are
// not kept, and the server stays down until the next successful Restart.
func (i *Instance) Restart(ctx context.Context, settings map[string]string) error {
	settings, err := normalizeSettings(settings)
	if err != nil {
		return fmt.Errorf("restart mariadbd in %s: %w", i.dataDir, err)
	}
	return i.life.Restart(ctx, i.names(), settings, stopSteps(), i.launch)
}

// Keep adds settings to the options the server starts with, without
// restarting it: what a run changed with SET GLOBAL then survives a later
// Restart, as it would in a my.cnf edited alongside.
func (i *Instance) Keep(settings map[string]string) error {
	settings, err := normalizeSettings(settings)
	if err != nil {
		return fmt.Errorf("keep settings of mariadbd in %s: %w", i.dataDir, err)
	}
	i.life.Keep(settings)
	return nil
}

// Stop stops the server (normal shutdown, then kill) and removes the whole
// temp dir; idempotent, safe to call from several goroutines: every call
// returns the first call's result.
func (i *Instance) Stop() error {
	// The data goes with the directory: no need for a clean shutdown's
	// checkpoint, so a short one, then SIGKILL.
	return i.life.Stop(i.names(), serverproc.Step{Signal: syscall.SIGTERM, Wait: 10 * time.Second},
		serverproc.Step{Signal: syscall.SIGKILL, Wait: 5 * time.Second})
}

// names are how the lifecycle names this server.
func (i *Instance) names() serverproc.Names {
	return serverproc.Names{Program: "mariadbd", Where: i.dataDir, Title: "MariaDB",
		Version: i.version, Addr: i.TCPAddr(), Dir: i.dir, Say: i.say}
}

// Host is the address the server listens on, "127.0.0.1".
func (i *Instance) Host() string { return "127.0.0.1" }

// Port is the server's TCP port.
func (i *Instance) Port() int { return i.port }

// TCPAddr is the loopback address the server listens on, "127.0.0.1:<port>".
func (i *Instance) TCPAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(i.port)) }

// Socket is the server's unix socket, in the instance directory.
func (i *Instance) Socket() string { return filepath.Join(i.dir, socketName) }

// User is the database user to connect as; it has every privilege.
func (i *Instance) User() string { return user }

// Password is the user's password, made for this instance. Never print it.
func (i *Instance) Password() string { return i.password }

// Database is the database created for the run: "firedrill".
func (i *Instance) Database() string { return database }

// DSN is the run user's connection string in go-sql-driver/mysql's form
// over TCP ("firedrill:…@tcp(127.0.0.1:port)/firedrill"); it holds the
// password.
func (i *Instance) DSN() string { return i.clientConfig("tcp").FormatDSN() }

// Dir is the instance directory (option file, socket, log, data directory).
func (i *Instance) Dir() string { return i.dir }

// DataDir is the server's data directory.
func (i *Instance) DataDir() string { return i.dataDir }

// SlowDisk switches the server's slow disk on and off; "" when the
// instance was started without Options.SlowDisk.
func (i *Instance) SlowDisk() slowdisk.Control { return i.slowDisk }

// LogPath is the server's error log, for reports and for debugging a failed run.
func (i *Instance) LogPath() string { return i.logPath }

// Version is the server version, e.g. "10.11.19", for version-gated SQL.
func (i *Instance) Version() string { return i.version }

// Settings are the options the server was last started with (the
// instance's defaults and the caller's), for run.json.
func (i *Instance) Settings() map[string]string { return i.life.Settings() }

// PID is mariadbd's process id, for host samplers; 0 while the server is down or has died.
func (i *Instance) PID() int { return i.life.PID() }

// say writes one progress line, if anyone listens.
func (i *Instance) say(format string, args ...any) { serverproc.Say(i.progress, format, args...) }

// writeOwned writes a file the server's user may read.
func (i *Instance) writeOwned(path, content string, perm os.FileMode) error {
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return serverproc.GiveTo(path, i.runAs)
}

// mkdirOwned makes a directory of the server's user.
func (i *Instance) mkdirOwned(path string) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return serverproc.GiveTo(path, i.runAs)
}

// installErrors picks from mariadb-install-db's output the lines that say
// what went wrong: it ends with a long page of generic advice, which a log
// tail alone would show instead.
func installErrors(logPath string) string {
	content, err := os.ReadFile(logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", logPath, err)
	}
	var picked []string
	for _, line := range strings.Split(string(content), "\n") {
		if strings.Contains(line, "ERROR") || strings.Contains(line, "[Warning]") || strings.Contains(line, "failed") {
			picked = append(picked, line)
		}
	}
	if len(picked) == 0 {
		return serverproc.LogTail(logPath, 0)
	}
	if len(picked) > 15 {
		picked = picked[len(picked)-15:]
	}
	return "server log " + logPath + " (errors):\n  " + strings.Join(picked, "\n  ")
}

// reaper removes MariaDB instance directories whose owner is gone, killing
// a mariadbd still running in one.
func reaper() serverproc.Reaper {
	return serverproc.Reaper{Prefix: dirPrefix, ServerPID: serverproc.PIDFile(pidFileName, serverProgram, "mysqld")}
}

// newPassword makes the run user's password: 32 hex digits.
func newPassword() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// quoteIdent quotes a MariaDB identifier.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// quoteString quotes a MariaDB string literal.
func quoteString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
