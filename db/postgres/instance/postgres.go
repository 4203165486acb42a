package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/instance/serverproc"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// superuser is the database superuser created by initdb.
	superuser = "firedrill"
	// database is the database every connection string names.
	database = "postgres"
	// dataDirName, logFileName and confFileName live inside the instance directory.
	dataDirName  = "data"
	logFileName  = "server.log"
	confFileName = "firedrill.conf" // included from postgresql.conf, rewritten at every start
	// readyWait bounds how long a start waits for the first connection; it
	// includes crash recovery after an immediate shutdown.
	readyWait = 60 * time.Second
	// portAttempts bounds the retries when another process takes the
	// chosen port between probing it and the server binding it.
	portAttempts = 5
)

// managedSettings are chosen by the instance itself; overriding them would
// break ConnString.
var managedSettings = []string{"listen_addresses", "port", "unix_socket_directories"}

// Options configure a throwaway server.
type Options struct {
	Settings map[string]string // postgresql.conf overrides, e.g. {"synchronous_commit":"off"}
	BinDir   string            // server binaries; "" = discover
	Progress io.Writer         // short human progress lines ("initdb…", "started PostgreSQL 15.18 on …"); nil = silent
}

// Instance is a running throwaway PostgreSQL server that owns a private
// temp directory (data, socket, log); Stop removes all of it.
type Instance struct {
	dir      string // the temp dir: owner file, log, socket, data dir
	dataDir  string
	logPath  string
	binDir   string
	version  string
	port     int
	runAs    *syscall.Credential // nil: run as the current user
	progress io.Writer
	life     *serverproc.Lifecycle // the server, its settings, Restart and Stop
}

// Start creates, configures and starts a throwaway server, and returns once
// it accepts connections. On error nothing it created is left behind.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	if err := validateSettings(opts.Settings); err != nil {
		return nil, err
	}
	inst := &Instance{progress: opts.Progress}
	binDir, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	inst.binDir = binDir
	if inst.version, err = serverVersion(ctx, binDir); err != nil {
		return nil, err
	}
	if inst.runAs, err = serverproc.Credential(ctx, "PostgreSQL", inst.say); err != nil {
		return nil, err
	}
	settings := defaultSettings(ctx, binDir)
	maps.Copy(settings, opts.Settings)
	inst.life = serverproc.NewLifecycle(settings)
	if inst.dir, err = reaper().NewDir(inst.say); err != nil {
		return nil, err
	}
	inst.dataDir = filepath.Join(inst.dir, dataDirName)
	inst.logPath = filepath.Join(inst.dir, logFileName)
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
	if err := serverproc.CheckSocketPath(filepath.Join(i.dir, ".s.PGSQL.65535")); err != nil {
		return err
	}
	if err := serverproc.HandOver(i.dir, i.runAs); err != nil {
		return err
	}
	if err := i.initdb(ctx); err != nil {
		return err
	}
	if err := appendInclude(i.dataDir); err != nil {
		return err
	}
	return i.life.Start(func(settings map[string]string) error {
		err := serverproc.OnFreePort(portAttempts, i.say, func(port int) error {
			i.port = port
			return i.launch(ctx, settings)
		})
		if err != nil {
			return err
		}
		i.say("started PostgreSQL %s on %s (socket in %s%s)", i.version, i.TCPAddr(), i.dir, serverproc.RunsAsNote(i.runAs))
		return nil
	})
}

// initdb creates the cluster: trust authentication (the socket is private
// and TCP listens on loopback only), UTF8, C locale for results that do not
// depend on the machine, and no fsync of the fresh files — that only speeds
// up initdb; the server itself keeps fsync on.
func (i *Instance) initdb(ctx context.Context) error {
	i.say("initdb %s…", i.dataDir)
	logFile, err := os.OpenFile(i.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create server log %s: %w", i.logPath, err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(i.binDir, "initdb"),
		"-D", i.dataDir, "-U", superuser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	cmd.Dir = i.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = serverproc.ProcAttr(i.runAs, syscall.SIGKILL)
	process, err := serverproc.Spawn(cmd)
	if err != nil {
		return fmt.Errorf("initdb in %s: %w", i.dataDir, err)
	}
	select {
	case <-process.Exited():
		err = process.Err()
	case <-ctx.Done():
		process.KillGroup()
		<-process.Exited()
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("initdb in %s: %w\n%s", i.dataDir, err, serverproc.LogTail(i.logPath, 0))
	}
	return nil
}

// launch writes the configuration for settings, starts the postmaster and
// waits until it accepts connections. On error the postmaster is gone.
// Called from the lifecycle's Start or Restart.
func (i *Instance) launch(ctx context.Context, settings map[string]string) error {
	if err := writeConfig(i.dataDir, i.managed(), settings); err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(i.binDir, "postgres"), "-D", i.dataDir)
	cmd.Dir = i.dir
	cmd.SysProcAttr = serverproc.ProcAttr(i.runAs, syscall.SIGQUIT)
	probe := i.ConnString() + " application_name=firedrill-ready-probe connect_timeout=5"
	return i.life.Launch(ctx, serverproc.Launch{
		Cmd:       cmd,
		LogPath:   i.logPath,
		SpawnWhat: "postgres in " + i.dataDir,
		What:      "postgres in " + i.dataDir,
		Port:      i.port,
		PortTaken: []string{"Address already in use"},
		// Connect until the server accepts a connection.
		Probe: func(ctx context.Context) error {
			conn, err := pgconn.Connect(ctx, probe)
			if err != nil {
				return err
			}
			// The probe has done its job; a failure to say goodbye on a
			// fresh connection says nothing about the server.
			_ = conn.Close(ctx)
			return nil
		},
		ProbeName: "connection attempt",
		Poll:      50 * time.Millisecond,
		ReadyWait: readyWait,
		Abort:     shutdownSteps(),
	})
}

// Restart stops the server (fast shutdown), merges settings into the
// current ones and starts it again on the same port and data directory,
// so that a run can change what needs a restart. If the server does not
// come back, the error carries the server log tail, the merged settings are
// not kept, and the server stays down until the next successful Restart.
func (i *Instance) Restart(ctx context.Context, settings map[string]string) error {
	if err := validateSettings(settings); err != nil {
		return fmt.Errorf("restart postgres in %s: %w", i.dataDir, err)
	}
	return i.life.Restart(ctx, i.names(), settings, shutdownSteps(), i.launch)
}

// Stop stops the server (fast shutdown, then immediate, then kill) and
// removes the whole temp dir; idempotent, safe to call from several
// goroutines: every call returns the first call's result.
func (i *Instance) Stop() error { return i.life.Stop(i.names(), shutdownSteps()...) }

// names are how the lifecycle names this server.
func (i *Instance) names() serverproc.Names {
	return serverproc.Names{Program: "postgres", Where: i.dataDir, Title: "PostgreSQL",
		Version: i.version, Addr: i.TCPAddr(), Dir: i.dir, Say: i.say}
}

// ConnString is the libpq key=value connection string for the unix socket:
// host=<socket dir> port=<port> user=<superuser> dbname=postgres sslmode=disable.
func (i *Instance) ConnString() string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		quoteConnValue(i.dir), i.port, quoteConnValue(superuser), quoteConnValue(database))
}

// Host is the unix socket directory, for clients that take -h.
func (i *Instance) Host() string { return i.dir }

// Port is the server's port, for both TCP and the unix socket name.
func (i *Instance) Port() int { return i.port }

// User is the database superuser to connect as.
func (i *Instance) User() string { return superuser }

// Database is the database to connect to: "postgres".
func (i *Instance) Database() string { return database }

// TCPAddr is the loopback address the server also listens on, "127.0.0.1:<port>".
func (i *Instance) TCPAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(i.port)) }

// DataDir is the cluster's data directory, for tools that read it (pg_waldump, pg_controldata).
func (i *Instance) DataDir() string { return i.dataDir }

// LogPath is the server log, for reports and for debugging a failed run.
func (i *Instance) LogPath() string { return i.logPath }

// BinDir is where the server binaries are, so callers can find pgbench or
// psql of the same version.
func (i *Instance) BinDir() string { return i.binDir }

// Version is the server version, e.g. "15.18", for version-gated SQL.
func (i *Instance) Version() string { return i.version }

// Settings are the settings the server was last started with (the
// defaults, the caller's, and what restarts changed).
func (i *Instance) Settings() map[string]string { return i.life.Settings() }

// PID is the postmaster's process id, for host samplers; 0 while the server is down or has died.
func (i *Instance) PID() int { return i.life.PID() }

// say writes one progress line, if anyone listens.
func (i *Instance) say(format string, args ...any) { serverproc.Say(i.progress, format, args...) }

// managed returns the settings the instance decides itself.
func (i *Instance) managed() map[string]string {
	return map[string]string{
		"listen_addresses":        "127.0.0.1",
		"port":                    strconv.Itoa(i.port),
		"unix_socket_directories": i.dir,
	}
}

// defaultSettings are the throwaway server's defaults, each overridable
// through Options.Settings:
//   - max_connections 200: load runs open many clients, plus samplers; the
//     stock 100 is hit by ordinary scenarios.
//   - shared_preload_libraries pg_stat_statements, when installed: the
//     per-statement sampler needs it, and it can only be loaded at start.
//
// fsync, synchronous_commit and full_page_writes keep their defaults on
// purpose: the product measures commit I/O, and a throwaway server that
// skips it would explain nothing about a real one.
func defaultSettings(ctx context.Context, binDir string) map[string]string {
	settings := map[string]string{"max_connections": "200"}
	if hasPgStatStatements(ctx, binDir) {
		settings["shared_preload_libraries"] = "pg_stat_statements"
	}
	return settings
}

// validateSettings rejects settings that cannot be written safely to
// postgresql.conf or that the instance manages itself.
func validateSettings(settings map[string]string) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		switch {
		case !isSettingName(name):
			errs = append(errs, fmt.Errorf("setting %q: not a valid parameter name", name))
		case slices.Contains(managedSettings, strings.ToLower(name)):
			errs = append(errs, fmt.Errorf("setting %q: chosen by the throwaway server itself (see ConnString)", name))
		case strings.ContainsAny(settings[name], "\n\r\x00"):
			errs = append(errs, fmt.Errorf("setting %q: value contains a line break or NUL", name))
		}
	}
	return errors.Join(errs...)
}

// isSettingName accepts parameter names, including extension ones
// ("pg_stat_statements.track").
func isSettingName(name string) bool {
	if name == "" || !(name[0] == '_' || isLetter(name[0])) {
		return false
	}
	for j := 1; j < len(name); j++ {
		c := name[j]
		if !(c == '_' || c == '.' || isLetter(c) || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// isLetter reports whether c is an ASCII letter.
func isLetter(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// appendInclude makes postgresql.conf read confFileName last, so our
// settings override initdb's while ALTER SYSTEM (postgresql.auto.conf,
// read after postgresql.conf) still overrides ours, as on a real server.
func appendInclude(dataDir string) error {
	path := filepath.Join(dataDir, "postgresql.conf")
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	_, err = fmt.Fprintf(file, "\n# Added by firedrill: its settings, rewritten at every start.\ninclude '%s'\n", confFileName)
	if closeErr := file.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeConfig writes confFileName: settings first, then managed ones
// (later lines win). Values are always quoted, which postgresql.conf
// accepts for every parameter type.
func writeConfig(dataDir string, managed, settings map[string]string) error {
	var text strings.Builder
	text.WriteString("# Written by firedrill at every start of this throwaway server; edits are lost.\n")
	for _, group := range []map[string]string{settings, managed} {
		for _, name := range slices.Sorted(maps.Keys(group)) {
			fmt.Fprintf(&text, "%s = %s\n", name, quoteConfValue(group[name]))
		}
	}
	path := filepath.Join(dataDir, confFileName)
	// World-readable so that the server, possibly running as another user, can read it.
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// quoteConfValue quotes a value for postgresql.conf, where backslash
// escapes are processed inside quotes.
func quoteConfValue(value string) string {
	value = strings.ReplaceAll(value, `\`, `\\`)
	return "'" + strings.ReplaceAll(value, "'", "''") + "'"
}

// quoteConnValue quotes a libpq key=value value when it needs it.
func quoteConnValue(value string) string {
	if value != "" && !strings.ContainsAny(value, " \t\n'\\") {
		return value
	}
	value = strings.ReplaceAll(value, `\`, `\\`)
	return "'" + strings.ReplaceAll(value, "'", `\'`) + "'"
}
