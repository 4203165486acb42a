package timeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// writeRunning leaves a run directory whose manifest says running, as a
// firedrill killed mid-run does, written by p.
func writeRunning(t *testing.T, p *Process) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(dir, ManifestFile, &Manifest{Format: Format, Name: "x", Status: StatusRunning, Process: p}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, PlainTimelineFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSettleKilled(t *testing.T) {
	t.Parallel()
	// A process that has ended: a child, started and reaped.
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	self := CurrentProcess()
	if self.StartTicks == 0 || self.BootID == "" {
		t.Fatalf("CurrentProcess() = %+v: no start time or boot id", self)
	}
	reused := *self
	reused.StartTicks++ // the same pid, but another process's start
	rebooted := *self
	rebooted.BootID = "another-boot"
	elsewhere := *self
	elsewhere.PID = child.Process.Pid
	elsewhere.Hostname = "another-host"
	dead := *self
	dead.PID = child.Process.Pid

	tests := []struct {
		name   string
		p      *Process
		killed bool
	}{
		{"this process is alive", self, false},
		{"its process has exited", &dead, true},
		{"the pid now belongs to another process", &reused, true},
		{"the machine rebooted since", &rebooted, true},
		// Another machine's process cannot be checked from here.
		{"another machine", &elsewhere, false},
		// Runs of older firedrills name no process.
		{"no process recorded", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeRunning(t, tt.p)
			run, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := StatusRunning
			if tt.killed {
				want = StatusKilled
			}
			if run.Manifest.Status != want {
				t.Errorf("Open: status %q, want %q", run.Manifest.Status, want)
			}
			marked, err := SettleKilled(dir)
			if err != nil || marked != tt.killed {
				t.Fatalf("SettleKilled = %v, %v; want %v", marked, err, tt.killed)
			}
			// What SettleKilled decided is on disk.
			run, err = Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if run.Manifest.Status != want || tt.killed && run.Manifest.Error == "" || !run.Manifest.Ended.IsZero() {
				t.Errorf("after SettleKilled: status %q, error %q, ended %v", run.Manifest.Status, run.Manifest.Error, run.Manifest.Ended)
			}
		})
	}
}
