package redis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/instance/serverproc"
	"github.com/firedrill/firedrill/internal/slowdisk"
)

const (
	// dirPrefix names every instance directory in the temp dir, so that
	// stale ones can be found.
	dirPrefix = "firedrill-redis-"
	// Files inside the instance directory.
	dataDirName  = "data" // the server's `dir`: RDB, appendonlydir
	confFileName = "redis.conf"
	logFileName  = "redis.log"
	pidFileName  = "redis.pid"
	socketName   = "redis.sock"
	// readyWait bounds how long a start waits for the first PONG; it
	// includes loading an AOF or RDB after a restart.
	readyWait = 60 * time.Second
	// shutdownWait is how long Restart lets an orderly shutdown (SIGTERM:
	// fsync the AOF, save if save points are set) take before killing.
	shutdownWait = 30 * time.Second
	// killWait bounds the wait for a killed server to exit.
	killWait = 5 * time.Second
	// portAttempts bounds the retries when another process takes the
	// chosen port between probing it and the server binding it.
	portAttempts = 5
)

// managedSettings are chosen by the instance itself: overriding them would
// move the server out of its directory, off its port or out of
// firedrill's hands.
var managedSettings = []string{"bind", "port", "unixsocket", "unixsocketperm", "dir", "daemonize",
	"supervised", "logfile", "pidfile", "include", "requirepass"}

// defaultSettings are the throwaway server's defaults, each overridable
// through Options.Settings (see the package doc for why).
var defaultSettings = map[string]string{
	"save":                      "",
	"appendonly":                "no",
	"latency-monitor-threshold": "10",
}

// Options configure a throwaway server.
type Options struct {
	// Settings are redis.conf directives, name → value, e.g.
	// {"appendonly": "yes", "appendfsync": "everysec"}; a value of several
	// words is several arguments ("save": "900 1 300 10"), "" is an empty
	// argument (save "").
	Settings map[string]string
	// Password, when set, is required of every client (requirepass).
	Password string
	// Binary is the redis-server to run; "" finds it on PATH.
	Binary string
	// Env is added to the server's environment (LD_PRELOAD of a slow-disk
	// library, say).
	Env []string
	// Progress receives short human progress lines; nil = silent.
	Progress io.Writer
	// SlowDisk builds firedrill's slow-disk library (internal/slowdisk)
	// into the instance directory and loads it into the server, so that
	// Instance.SlowDisk can make its disk a busy one (the slow mode of
	// disk_pressure). It needs a C compiler.
	SlowDisk bool
}

// Instance is a running throwaway redis-server that owns a private temp
// directory (data, socket, config, log); Stop removes all of it.
type Instance struct {
	dir      string
	dataDir  string
	logPath  string
	binary   string
	version  string
	password string
	env      []string
	slowDisk slowdisk.Control // "" without Options.SlowDisk
	port     int
	runAs    *syscall.Credential
	progress io.Writer
	life     *serverproc.Lifecycle // the server, its settings, Restart and Stop
}

// Start creates, configures and starts a throwaway server and returns once
// it answers PING. On error nothing it created is left behind.
func Start(ctx context.Context, opts Options) (*Instance, error) {
	if err := validateSettings(opts.Settings); err != nil {
		return nil, err
	}
	if strings.ContainsAny(opts.Password, "\n\r\x00") {
		return nil, errors.New("redis password contains a line break or NUL")
	}
	inst := &Instance{progress: opts.Progress, password: opts.Password, env: opts.Env}
	var err error
	if inst.binary, err = findBinary(opts.Binary); err != nil {
		return nil, err
	}
	if inst.version, err = serverVersion(ctx, inst.binary); err != nil {
		return nil, err
	}
	if inst.runAs, err = serverproc.Credential(ctx, "Redis", inst.say); err != nil {
		return nil, err
	}
	settings := maps.Clone(defaultSettings)
	maps.Copy(settings, opts.Settings)
	inst.life = serverproc.NewLifecycle(settings)
	if inst.dir, err = reaper.NewDir(inst.say); err != nil {
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
	if err := os.Mkdir(i.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	for _, path := range []string{i.dir, i.dataDir} {
		if err := serverproc.HandOver(path, i.runAs); err != nil {
			return err
		}
	}
	if i.slowDisk != "" {
		// In the instance directory, so that it goes with the server
		// and is reaped with it after a kill.
		lib, err := slowdisk.Build(ctx, i.dir)
		if err != nil {
			return err
		}
		i.env = append(slices.Clone(i.env), slowdisk.Env(lib, i.slowDisk)...)
	}
	return i.life.Start(func(settings map[string]string) error {
		err := serverproc.OnFreePort(portAttempts, i.say, func(port int) error {
			i.port = port
			return i.launch(ctx, settings)
		})
		if err != nil {
			return err
		}
		i.say("started Redis %s on %s (socket %s%s)", i.version, i.Addr(), i.Socket(), serverproc.RunsAsNote(i.runAs))
		return nil
	})
}

// launch writes the configuration for settings, starts the server and
// waits until it answers. On error the server is gone. Called from the
// lifecycle's Start or Restart.
func (i *Instance) launch(ctx context.Context, settings map[string]string) error {
	if err := i.writeConfig(settings); err != nil {
		return err
	}
	cmd := exec.Command(i.binary, filepath.Join(i.dir, confFileName))
	cmd.Dir = i.dataDir
	cmd.Env = append(os.Environ(), i.env...)
	// SIGKILL at firedrill's death: the data is throwaway, and nothing
	// else is sure to stop a server stuck on a slow disk.
	cmd.SysProcAttr = serverproc.ProcAttr(i.runAs, syscall.SIGKILL)
	return i.life.Launch(ctx, serverproc.Launch{
		Cmd:       cmd,
		LogPath:   i.logPath,
		SpawnWhat: i.binary + " in " + i.dir,
		What:      "redis-server in " + i.dir,
		Port:      i.port,
		PortTaken: []string{"Address already in use"},
		// A server loading its data answers -LOADING, which is not ready yet.
		Probe:     i.ping,
		ProbeName: "PING",
		Poll:      20 * time.Millisecond,
		ReadyWait: readyWait,
		Abort:     []serverproc.Step{{Signal: syscall.SIGKILL, Wait: killWait}},
	})
}

// ping sends AUTH (when a password is set) and PING over the unix socket.
func (i *Instance) ping(ctx context.Context) error {
	var dialer net.Dialer
	dialCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := dialer.DialContext(dialCtx, "unix", i.Socket())
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	var request []byte
	if i.password != "" {
		request = appendCommand(request, "AUTH", i.password)
	}
	request = appendCommand(request, "PING")
	if _, err := conn.Write(request); err != nil {
		return err
	}
	reader := bufio.NewReader(conn)
	if i.password != "" {
		if line, err := reader.ReadString('\n'); err != nil {
			return err
		} else if !strings.HasPrefix(line, "+OK") {
			return fmt.Errorf("AUTH: %s", strings.TrimSpace(line))
		}
	}
	line, err := reader.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING: %s", strings.TrimSpace(line))
	}
	return nil
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, arg := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(arg), arg)
	}
	return b
}

// Restart stops the server in order (SIGTERM: the AOF is flushed, an RDB
// saved if save points are set, as a real restart does), merges settings
// into the current ones and starts it again on the same port and data,
// which it loads. If it does not come back, the error carries the log
// tail, the merged settings are not kept, and the server stays down until
// the next successful Restart.
func (i *Instance) Restart(ctx context.Context, settings map[string]string) error {
	if err := validateSettings(settings); err != nil {
		return fmt.Errorf("restart redis-server in %s: %w", i.dir, err)
	}
	return i.life.Restart(ctx, i.names(), settings, []serverproc.Step{
		{Signal: syscall.SIGTERM, Wait: shutdownWait},
		{Signal: syscall.SIGKILL, Wait: killWait},
	}, i.launch)
}

// Stop kills the server (its data is thrown away, so there is nothing to
// save) and removes the whole temp dir; idempotent and safe from several
// goroutines: every call returns the first call's result.
func (i *Instance) Stop() error {
	return i.life.Stop(i.names(), serverproc.Step{Signal: syscall.SIGKILL, Wait: killWait})
}

// names are how the lifecycle names this server.
func (i *Instance) names() serverproc.Names {
	return serverproc.Names{Program: "redis-server", Where: i.dir, Title: "Redis",
		Version: i.version, Addr: i.Addr(), Dir: i.dir, Say: i.say}
}

// Addr is the loopback TCP address the server listens on, "127.0.0.1:<port>".
func (i *Instance) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(i.port)) }

// Port is the server's TCP port.
func (i *Instance) Port() int { return i.port }

// Socket is the server's unix socket path.
func (i *Instance) Socket() string { return filepath.Join(i.dir, socketName) }

// Password is what clients must AUTH with; "" when none is required.
func (i *Instance) Password() string { return i.password }

// Dir is the instance directory (config, log, socket, data).
func (i *Instance) Dir() string { return i.dir }

// DataDir is the server's working directory (`dir`: RDB file,
// appendonlydir), the one a slow disk must slow.
func (i *Instance) DataDir() string { return i.dataDir }

// SlowDisk switches the server's slow disk on and off; "" when the
// instance was started without Options.SlowDisk.
func (i *Instance) SlowDisk() slowdisk.Control { return i.slowDisk }

// LogPath is the server log, for reports and for debugging a failed run.
func (i *Instance) LogPath() string { return i.logPath }

// Version is the server's version, e.g. "7.0.15".
func (i *Instance) Version() string { return i.version }

// Settings are the redis.conf directives of the running server (defaults,
// the options', those of restarts); CONFIG SET changes are not in them.
func (i *Instance) Settings() map[string]string { return i.life.Settings() }

// PID is the server's process id, for host samplers; 0 while it is down or has died.
func (i *Instance) PID() int { return i.life.PID() }

// say writes one progress line, if anyone listens.
func (i *Instance) say(format string, args ...any) { serverproc.Say(i.progress, format, args...) }

// writeConfig writes redis.conf: settings, then what the instance manages
// (later lines win). It may hold the password, so only the server's user
// may read it.
func (i *Instance) writeConfig(settings map[string]string) error {
	var text strings.Builder
	text.WriteString("# Written by firedrill at every start of this throwaway server; edits are lost.\n")
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&text, "%s %s\n", name, confValue(settings[name]))
	}
	managed := [][2]string{
		{"bind", "127.0.0.1"},
		{"port", strconv.Itoa(i.port)},
		{"unixsocket", quoteConf(i.Socket())},
		{"unixsocketperm", "700"},
		{"dir", quoteConf(i.dataDir)},
		{"pidfile", quoteConf(filepath.Join(i.dir, pidFileName))},
		{"daemonize", "no"},
		{"supervised", "no"},
		{"logfile", `""`},
	}
	if i.password != "" {
		managed = append(managed, [2]string{"requirepass", quoteConf(i.password)})
	}
	for _, kv := range managed {
		fmt.Fprintf(&text, "%s %s\n", kv[0], kv[1])
	}
	path := filepath.Join(i.dir, confFileName)
	if err := os.WriteFile(path, []byte(text.String()), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// The server's user owns it: CONFIG REWRITE writes it back.
	return serverproc.GiveTo(path, i.runAs)
}

// confValue writes a setting's value: its words as they are (a directive
// of several arguments), or "" for an empty one.
func confValue(value string) string {
	if strings.TrimSpace(value) == "" {
		return `""`
	}
	return value
}

// quoteConf quotes one argument for redis.conf, whose lines are split as
// redis-cli splits them: "…" with \\, \" and \xNN escapes.
func quoteConf(value string) string {
	var b strings.Builder
	b.WriteByte('"')
	for j := 0; j < len(value); j++ {
		switch c := value[j]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// settingName is what a redis.conf directive looks like.
var settingName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// validateSettings rejects settings that cannot be written safely to
// redis.conf or that the instance manages itself.
func validateSettings(settings map[string]string) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		switch {
		case !settingName.MatchString(name):
			errs = append(errs, fmt.Errorf("setting %q: not a redis.conf directive (lower-case words joined by -)", name))
		case slices.Contains(managedSettings, name):
			errs = append(errs, fmt.Errorf("setting %q: chosen by the throwaway server itself", name))
		case strings.ContainsAny(settings[name], "\n\r\x00"):
			errs = append(errs, fmt.Errorf("setting %q: value contains a line break or NUL", name))
		}
	}
	return errors.Join(errs...)
}

// findBinary finds redis-server: the given path, else PATH, else Debian's place.
func findBinary(given string) (string, error) {
	if given != "" {
		if _, err := os.Stat(given); err != nil {
			return "", fmt.Errorf("redis-server %s: %w", given, err)
		}
		return given, nil
	}
	if path, err := exec.LookPath("redis-server"); err == nil {
		return path, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", errors.New("redis-server not found on PATH: install it with scripts/setup.sh " +
		"(or `apt-get install redis-server redis-tools`), or run against your own server with --dsn redis://host:port/0")
}

// serverVersion asks the binary its version ("Redis server v=7.0.15 sha=…").
func serverVersion(ctx context.Context, binary string) (string, error) {
	out, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", binary, err)
	}
	version, ok := versionFromBanner(string(out))
	if !ok {
		return "", fmt.Errorf("%s --version: no version in %q", binary, strings.TrimSpace(string(out)))
	}
	return version, nil
}

var versionField = regexp.MustCompile(`\bv=([0-9][0-9A-Za-z.\-]*)`)

// versionFromBanner finds the version in redis-server --version's output.
func versionFromBanner(banner string) (string, bool) {
	m := versionField.FindStringSubmatch(banner)
	if m == nil {
		return "", false
	}
	return m[1], true
}
