package serverproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrPortInUse marks a start that failed only because the port was taken,
// so that the instance tries another port.
var ErrPortInUse = errors.New("port already in use")

// Lifecycle is what every throwaway server's instance keeps to launch,
// restart and stop its server: the running process, the settings it was
// started with, and the lock that serialises a restart and a stop.
type Lifecycle struct {
	stopping     chan struct{} // closed when Stop begins, to abort a start in progress
	stoppingOnce sync.Once
	current      atomic.Pointer[Process] // the server for PID, which must not wait for mu (Restart holds it for seconds)

	mu       sync.Mutex // guards the fields below, and serialises Restart and Stop
	settings map[string]string
	server   *Process // nil while the server is down
	stopped  bool
	stopErr  error
}

// NewLifecycle returns the lifecycle of a server not started yet, which
// will start with settings.
func NewLifecycle(settings map[string]string) *Lifecycle {
	return &Lifecycle{stopping: make(chan struct{}), settings: settings}
}

// Names says how a server is named in errors and progress lines.
type Names struct {
	Program string // the server program: "stop <Program> in <Where>: …"
	Where   string // the directory errors name
	Title   string // its product name: "restarted <Title> <Version> on <Addr>"
	Version string
	Addr    string
	Dir     string // the instance directory, removed by Stop
	Say     func(format string, args ...any)
}

// Start runs first (which launches the server with the settings given to
// NewLifecycle) with the lock held, so that a Stop waits for it.
func (l *Lifecycle) Start(first func(settings map[string]string) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return first(l.settings)
}

// Settings are the settings the server was last started with.
func (l *Lifecycle) Settings() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.settings)
}

// Keep adds settings to those the next start uses, without restarting.
func (l *Lifecycle) Keep(settings map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	maps.Copy(l.settings, settings)
}

// PID is the server's process id; 0 while it is down or has died.
func (l *Lifecycle) PID() int {
	if server := l.current.Load(); server != nil && server.Running() {
		return server.PID()
	}
	return 0
}

// Launch is one start of a server: its command, its log, and how to tell
// it is ready.
type Launch struct {
	Cmd       *exec.Cmd // Stdout and Stderr are set to the log
	LogPath   string
	SpawnWhat string // "postgres in <dir>": "start <SpawnWhat>: …" when it cannot be started
	What      string // "postgres in <dir>": "start <What> on port <Port>: …" when it does not become ready
	Port      int
	// PortTaken are the log's words for a port already in use.
	PortTaken []string
	// Probe is tried every Poll until it succeeds, for at most ReadyWait;
	// ProbeName names its last error ("last <ProbeName>: …").
	Probe     func(ctx context.Context) error
	ProbeName string
	Poll      time.Duration
	ReadyWait time.Duration
	// Abort stops a server that does not become ready.
	Abort []Step
}

// Launch starts the server and waits until it is ready. On error the
// server is gone, and the error carries what it logged meanwhile (wrapping
// ErrPortInUse when that is why). Called with the lock held (from Start's
// or Restart's function).
func (l *Lifecycle) Launch(ctx context.Context, spec Launch) error {
	logFile, err := os.OpenFile(spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log %s: %w", spec.LogPath, err)
	}
	var logStart int64
	if info, err := logFile.Stat(); err == nil {
		logStart = info.Size()
	}
	spec.Cmd.Stdout = logFile
	spec.Cmd.Stderr = logFile
	server, err := Spawn(spec.Cmd)
	logFile.Close() // the child has its own copy
	if err != nil {
		return fmt.Errorf("start %s: %w", spec.SpawnWhat, err)
	}
	if err := l.waitReady(ctx, server, spec); err != nil {
		stopErr := server.Stop(spec.Abort...)
		tail := LogTail(spec.LogPath, logStart)
		err = fmt.Errorf("start %s on port %d: %w\n%s", spec.What, spec.Port, err, tail)
		for _, taken := range spec.PortTaken {
			if strings.Contains(tail, taken) {
				err = fmt.Errorf("%w: %w", ErrPortInUse, err)
				break
			}
		}
		return errors.Join(err, stopErr)
	}
	l.server = server
	l.current.Store(server)
	return nil
}

// waitReady probes until the server is ready, exits, Stop is called, ctx
// ends or spec.ReadyWait passes.
func (l *Lifecycle) waitReady(ctx context.Context, server *Process, spec Launch) error {
	ctx, cancel := context.WithTimeout(ctx, spec.ReadyWait)
	defer cancel()
	var lastErr error
	for {
		if lastErr = spec.Probe(ctx); lastErr == nil {
			return nil
		}
		select {
		case <-server.Exited():
			return fmt.Errorf("server exited during startup (%v)", server.Err())
		case <-l.stopping:
			return errors.New("stopped while starting")
		case <-ctx.Done():
			return fmt.Errorf("server not ready: %w (last %s: %v)", ctx.Err(), spec.ProbeName, lastErr)
		case <-time.After(spec.Poll):
		}
	}
}

// Restart stops the server by steps, merges settings into the current ones
// and starts it again with launch. If it does not come back, the merged
// settings are not kept and the server stays down until the next
// successful Restart.
func (l *Lifecycle) Restart(ctx context.Context, n Names, settings map[string]string, steps []Step,
	launch func(ctx context.Context, settings map[string]string) error,
) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return fmt.Errorf("restart %s in %s: instance is stopped", n.Program, n.Where)
	}
	if l.server != nil {
		n.Say("restarting %s on %s…", n.Title, n.Addr)
		l.current.Store(nil)
		err := l.server.Stop(steps...)
		l.server = nil
		if err != nil {
			return fmt.Errorf("restart %s in %s: %w", n.Program, n.Where, err)
		}
		// After a crash the server's children may outlive it, out of its
		// process group (PostgreSQL's backends), holding what the next
		// start needs (its shared memory).
		if n.Where != "" {
			if left := KillIn(n.Where, groupExitWait); len(left) > 0 {
				return fmt.Errorf("restart %s in %s: processes %v of the old server still running after SIGKILL", n.Program, n.Where, left)
			}
		}
	}
	merged := maps.Clone(l.settings)
	maps.Copy(merged, settings)
	if err := launch(ctx, merged); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	l.settings = merged
	n.Say("restarted %s %s on %s", n.Title, n.Version, n.Addr)
	return nil
}

// Stop stops the server by steps and removes the instance directory;
// idempotent, safe to call from several goroutines: every call returns the
// first call's result.
func (l *Lifecycle) Stop(n Names, steps ...Step) error {
	l.stoppingOnce.Do(func() { close(l.stopping) })
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return l.stopErr
	}
	l.stopped = true
	var errs []error
	wasRunning := l.server != nil && l.server.Running()
	if l.server != nil {
		l.current.Store(nil)
		if err := l.server.Stop(steps...); err != nil {
			errs = append(errs, fmt.Errorf("stop %s in %s: %w", n.Program, n.Where, err))
		}
		l.server = nil
	}
	if n.Dir != "" {
		if err := os.RemoveAll(n.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove instance directory: %w", err))
		}
	}
	l.stopErr = errors.Join(errs...)
	switch {
	case l.stopErr != nil:
	case wasRunning:
		n.Say("stopped %s on %s and removed %s", n.Title, n.Addr, n.Dir)
	case n.Dir != "":
		n.Say("removed %s", n.Dir)
	}
	return l.stopErr
}

// Stopping is closed when Stop begins, so that a long step of a start (an
// initializer) can give up.
func (l *Lifecycle) Stopping() <-chan struct{} { return l.stopping }
