package serverproc

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	return cmd.Process.Pid
}

func TestReapStaleDecidesByOwner(t *testing.T) {
	t.Parallel()
	myStart, ok := processStartTime(os.Getpid())
	if !ok {
		t.Skip("no /proc: cannot read process start times")
	}
	dead := deadPID(t)
	old := time.Now().Add(-2 * ownerlessGrace)
	tests := []struct {
		name  string
		owner string // owner file content; "" = no owner file
		old   bool   // directory older than ownerlessGrace
		reap  bool
	}{
		// A live owner's directory is never touched.
		{"live owner", strconv.Itoa(os.Getpid()) + " " + myStart, false, false},
		{"live owner without start time", strconv.Itoa(os.Getpid()), true, false},
		// The owner process is gone.
		{"dead owner", strconv.Itoa(dead), false, true},
		// Our pid, but a different start time: the owner died and its pid was recycled.
		{"recycled pid", strconv.Itoa(os.Getpid()) + " 1", false, true},
		// A directory is created a moment before its owner file: leave young ones alone.
		{"no owner file yet", "", false, false},
		{"no owner file for long", "", true, true},
		{"garbage owner file, young", "not a pid", false, false},
		{"garbage owner file, old", "not a pid", true, true},
	}
	const prefix = "firedrill-test-"
	root := t.TempDir()
	dirs := make([]string, len(tests))
	for n, test := range tests {
		dirs[n] = filepath.Join(root, prefix+strconv.Itoa(n))
		if err := os.Mkdir(dirs[n], 0o700); err != nil {
			t.Fatal(err)
		}
		if test.owner != "" {
			if err := os.WriteFile(filepath.Join(dirs[n], OwnerFileName), []byte(test.owner+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if test.old {
			if err := os.Chtimes(dirs[n], old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Not instance directories of this kind: left alone whatever their content.
	unrelated := filepath.Join(root, "firedrill-other")
	if err := os.Mkdir(unrelated, 0o700); err != nil {
		t.Fatal(err)
	}

	var reported []string
	reaper := Reaper{Prefix: prefix, ServerPID: PIDFile("server.pid", "none")}
	if err := reaper.ReapStale(root, func(format string, args ...any) {
		reported = append(reported, args[0].(string))
	}); err != nil {
		t.Fatalf("ReapStale: %v", err)
	}
	for n, test := range tests {
		_, err := os.Stat(dirs[n])
		reaped := os.IsNotExist(err)
		if reaped != test.reap {
			t.Errorf("%s: reaped = %v, want %v", test.name, reaped, test.reap)
		}
		if reaped != slices.Contains(reported, dirs[n]) {
			t.Errorf("%s: reaped = %v but reported = %v", test.name, reaped, !reaped)
		}
	}
	if _, err := os.Stat(unrelated); err != nil {
		t.Errorf("unrelated directory touched: %v", err)
	}
}

func TestIsServerInRejectsOtherProcesses(t *testing.T) {
	t.Parallel()
	self := filepath.Base(os.Args[0])
	tests := []struct {
		name     string
		pid      int
		dir      string
		programs []string
		want     bool
	}{
		// The test binary runs with -test.* arguments, none inside /tmp/x.
		{"not its directory", os.Getpid(), "/tmp/x", []string{self}, false},
		{"not its program", os.Getpid(), "/", []string{"mariadbd"}, false},
		// A dead pid is no one's.
		{"dead", deadPID(t), "/", []string{self}, false},
	}
	for _, test := range tests {
		if got := IsServerIn(test.pid, test.dir, test.programs...); got != test.want {
			t.Errorf("%s: IsServerIn = %v, want %v", test.name, got, test.want)
		}
	}
}

// helperEnv makes the test binary act as a server (see TestHelperServer).
const helperEnv = "FIREDRILL_SERVERPROC_HELPER"

// TestHelperServer is not a test: started by other tests in a child
// process, it stands for a server running in the directory given after
// "--": it writes its pid to server.pid there and sleeps. With
// helperEnv=owner it starts such a server itself through Spawn, with a
// parent-death signal, prints the server's pid and sleeps until killed.
func TestHelperServer(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process")
	}
	dir := os.Args[len(os.Args)-1]
	switch mode {
	case "server":
		if err := os.WriteFile(filepath.Join(dir, "server.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			os.Exit(2)
		}
	case "owner":
		if err := WriteOwnerFile(dir); err != nil {
			os.Exit(2)
		}
		server, err := Spawn(helperCommand("server", dir))
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("pid=" + strconv.Itoa(server.PID()) + "\n")
	}
	time.Sleep(time.Hour)
	os.Exit(0)
}

// helperCommand runs TestHelperServer in mode for dir, in its own process
// group with SIGKILL as its parent-death signal.
func helperCommand(mode, dir string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServer$", "-test.timeout=5m", "--", dir)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.SysProcAttr = ProcAttr(nil, syscall.SIGKILL)
	return cmd
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A stale directory's server that still runs (its owner died without a
// parent-death signal reaching it) is killed and its directory removed; a
// live owner's server is left running.
func TestReapStaleKillsTheServerOfADeadOwner(t *testing.T) {
	t.Parallel()
	const prefix = "firedrill-test-"
	root := t.TempDir()
	reaper := Reaper{Prefix: prefix, ServerPID: PIDFile("server.pid", filepath.Base(os.Args[0]))}
	servers := map[string]*Process{}
	for _, owner := range []string{"dead", "live"} {
		dir := filepath.Join(root, prefix+owner)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		ownerPID := deadPID(t)
		if owner == "live" {
			ownerPID = os.Getpid()
		}
		if err := os.WriteFile(filepath.Join(dir, OwnerFileName), []byte(strconv.Itoa(ownerPID)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		server, err := Spawn(helperCommand("server", dir))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = server.Stop(Step{syscall.SIGKILL, 5 * time.Second}) })
		waitFile(t, filepath.Join(dir, "server.pid"))
		servers[owner] = server
	}
	if err := reaper.ReapStale(root, nil); err != nil {
		t.Fatalf("ReapStale: %v", err)
	}
	select {
	case <-servers["dead"].Exited():
	case <-time.After(5 * time.Second):
		t.Error("the dead owner's server still runs")
	}
	if _, err := os.Stat(filepath.Join(root, prefix+"dead")); !os.IsNotExist(err) {
		t.Errorf("the dead owner's directory is still there (%v)", err)
	}
	if !servers["live"].Running() {
		t.Errorf("the live owner's server was stopped: %v", servers["live"].Err())
	}
	if _, err := os.Stat(filepath.Join(root, prefix+"live")); err != nil {
		t.Errorf("the live owner's directory was touched: %v", err)
	}
}

// A server started by Spawn dies with its owner, even when the owner is
// killed outright.
func TestServerDiesWithItsOwner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	owner := helperCommand("owner", dir)
	owner.SysProcAttr = nil
	stdout, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	var server int
	lines := bufio.NewScanner(stdout)
	for server == 0 && lines.Scan() {
		if text, ok := strings.CutPrefix(lines.Text(), "pid="); ok {
			server, _ = strconv.Atoi(text)
		}
	}
	if server == 0 {
		t.Fatalf("the owner printed no server pid (%v)", lines.Err())
	}
	waitFile(t, filepath.Join(dir, "server.pid"))
	if !IsServerIn(server, dir, filepath.Base(os.Args[0])) {
		t.Fatalf("pid %d is not the helper server in %s: %q", server, dir, Args(server))
	}
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for Alive(server, "") {
		if time.Now().After(deadline) {
			_ = syscall.Kill(server, syscall.SIGKILL)
			t.Fatalf("server %d outlived its killed owner", server)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop escalates: a process that ignores the first signal is ended by the next.
func TestStopEscalates(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", `trap "" TERM; echo ready; while :; do sleep 0.05; done`)
	cmd.SysProcAttr = ProcAttr(nil, syscall.SIGKILL)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	process, err := Spawn(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !bufio.NewScanner(stdout).Scan() {
		t.Fatal("the shell never got ready")
	}
	start := time.Now()
	err = process.Stop(Step{syscall.SIGTERM, 300 * time.Millisecond}, Step{syscall.SIGKILL, 5 * time.Second})
	if err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if process.Running() {
		t.Fatal("still running after Stop")
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("Stop took %v: SIGTERM, which the shell ignores, should have been given its wait", waited)
	}
	// Its child (sleep) was in its group and is gone too.
	if children := Tree(process.PID()); len(children) > 1 {
		t.Errorf("children left: %v", children[1:])
	}
}
