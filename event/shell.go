package event

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/firedrill/firedrill/scenario"
)

const (
	// shellOutputKept is how much of the end of a command's output is kept
	// to find its last line.
	shellOutputKept = 4096
	// shellLastLineMax bounds the last line quoted in the outcome.
	shellLastLineMax = 200
	// shellOutputWait bounds how long the output is read after the command
	// and its process group are gone, in case a process that left the
	// group still holds it open.
	shellOutputWait = 2 * time.Second
)

// shellKind is how a scenario writes a shell event.
var shellKind = Kind{
	EventKind: scenario.EventKind{
		Name:    "shell",
		Keys:    []string{"command"},
		Example: "{kind: shell, at: 5s, command: sync}",
		Decode:  decodeShell,
	},
	Build: BuildWith(newShell),
}

// shellConfig is what a shell event takes.
type shellConfig struct {
	Command string // for sh -c; runs only with --allow-shell
}

func decodeShell(d *scenario.EventDecoder) (any, time.Duration) {
	var c shellConfig
	d.Key("command", func(v scenario.Value) {
		if command, ok := v.Str(); ok {
			if strings.TrimSpace(command) == "" {
				v.Errorf("command: empty")
				return
			}
			c.Command = command
		}
	})
	d.Need("command")
	return c, 0
}

// shellEvent runs a command with sh -c, in a process group of its own so
// that the command and everything it started can be killed together.
type shellEvent struct {
	name    string
	command string
}

var (
	_ Event   = (*shellEvent)(nil)
	_ Checker = (*shellEvent)(nil)
)

func newShell(spec scenario.Event, c shellConfig) Event {
	return &shellEvent{name: Name(spec), command: c.Command}
}

// Check refuses to run without --allow-shell.
func (e *shellEvent) Check(env *Env) error {
	if !env.AllowShell {
		return fmt.Errorf("shell %s: shell events need --allow-shell", e.name)
	}
	return nil
}

// Run runs the command until it exits, then kills what it left running
// in its process group (so that nothing outlives the event); on
// cancellation it kills the whole group at once. The environment carries
// FIREDRILL_EVENT, FIREDRILL_CONNSTRING and, for the embedded server,
// FIREDRILL_DATADIR. A nonzero exit is an error.
func (e *shellEvent) Run(ctx context.Context, env *Env, started Started) (string, map[string]any, error) {
	if err := e.Check(env); err != nil {
		return "", nil, err
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	outputReader, outputWriter, err := os.Pipe()
	if err != nil {
		return "", nil, fmt.Errorf("shell %s: output pipe: %w", e.name, err)
	}
	cmd := exec.Command("sh", "-c", e.command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout = outputWriter
	cmd.Stderr = outputWriter
	cmd.Env = append(os.Environ(), "FIREDRILL_EVENT="+e.name, "FIREDRILL_CONNSTRING="+env.ConnString)
	if env.DataDir != "" {
		cmd.Env = append(cmd.Env, "FIREDRILL_DATADIR="+env.DataDir)
	}
	startErr := cmd.Start()
	outputWriter.Close() // the command has its own copy
	if startErr != nil {
		outputReader.Close()
		return "", nil, fmt.Errorf("shell %s: start sh: %w", e.name, startErr)
	}
	output := &tailBuffer{max: shellOutputKept}
	outputDone := make(chan struct{})
	go func() {
		defer close(outputDone)
		// Read until every holder of the pipe is gone, or until the pipe
		// is closed under us below.
		_, _ = io.Copy(output, outputReader)
	}()

	pid := cmd.Process.Pid
	detail := map[string]any{"pid": pid, "command": e.command}
	Notify(started, maps.Clone(detail))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-ctx.Done():
	}
	// The process group's id is the shell's pid, which stays reserved
	// while any member of the group is alive.
	killErr := killProcessGroup(pid)
	if ctx.Err() != nil {
		<-exited
	}
	select {
	case <-outputDone:
	case <-time.After(shellOutputWait):
	}
	outputReader.Close()
	<-outputDone
	if ctx.Err() != nil {
		return "", detail, errors.Join(ctx.Err(), killErr)
	}
	if killErr != nil {
		return "", detail, fmt.Errorf("shell %s: kill what the command left running: %w", e.name, killErr)
	}

	lastLine := output.lastLine()
	detail["exit_code"] = cmd.ProcessState.ExitCode()
	detail["last_line"] = lastLine
	status := cmd.ProcessState.String() // "exit status 3", "signal: killed"
	outcome := status
	if lastLine != "" {
		outcome += ": " + lastLine
	}
	if waitErr != nil {
		return outcome, detail, fmt.Errorf("shell %s: %s", e.name, outcome)
	}
	return outcome, detail, nil
}

// killProcessGroup kills every process of the group; a group already gone
// is not an error.
func killProcessGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max  int
	data []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.data = append(t.data, p...)
	if excess := len(t.data) - t.max; excess > 0 {
		t.data = append(t.data[:0], t.data[excess:]...)
	}
	return len(p), nil
}

// lastLine is the last non-blank line of the output, cut to
// shellLastLineMax characters.
func (t *tailBuffer) lastLine() string {
	text := strings.TrimRight(strings.ToValidUTF8(string(t.data), "?"), " \t\r\n")
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	text = strings.TrimSpace(text)
	if utf8.RuneCountInString(text) > shellLastLineMax {
		text = string([]rune(text)[:shellLastLineMax-1]) + "…"
	}
	return text
}
