package host

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

// TestServerSamplesAProcessTree: the CPU of a child that burns a core
// counts towards its parent's tree, and so do the processes.
func TestServerSamplesAProcessTree(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	burn := exec.Command("sh", "-c", "while :; do :; done")
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = burn.Process.Kill(); _ = burn.Wait() })
	s := Server(os.Getpid)
	if s.Name() != hostmetric.Server {
		t.Errorf("Name() = %q", s.Name())
	}
	if _, _, err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	v, _, err := s.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A busy loop gets at least a tenth of a core even on a loaded
	// machine; the whole tree cannot use more than the machine has.
	if v[hostmetric.ServerCPU] < 0.1 || v[hostmetric.ServerProcesses] < 2 {
		t.Errorf("values %v: want the child's burning CPU (≥ 0.1 core) and ≥ 2 processes", v)
	}
	if _, _, err := Server(func() int { return 0 }).Sample(context.Background()); err == nil {
		t.Error("no process: want an error")
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	st, ok := parseProcStat([]byte("4242 (post gres) (x)) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 30 7 3 20 0 1 0 100 1000 200 18446744073709551615\n"))
	if !ok || st.ppid != 17 || st.utime != 250 || st.stime != 30 || st.cutime != 7 || st.cstime != 3 {
		t.Errorf("parseProcStat = %+v, %v", st, ok)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S", "1 (x) S zz 1 1 0 -1 0 0 0 0 0 1 2 3 4", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 -1 2 3 4"} {
		if _, ok := parseProcStat([]byte(bad)); ok {
			t.Errorf("parseProcStat(%q) ok", bad)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("4242 (postgres) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 30 7 3 20 0 1 0 100 1000 200\n"))
	f.Add([]byte("1 ()) R 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 1 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, ok := parseProcStat(b)
		if ok && (st.utime < 0 || st.stime < 0 || st.cutime < 0 || st.cstime < 0) {
			t.Errorf("negative times %+v", st)
		}
	})
}
