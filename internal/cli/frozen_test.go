package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	redisinstance "github.com/firedrill/firedrill/db/redis/instance"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/timeline"
)

// givenServer is a throwaway server of one kind, given to a run with
// --dsn, whose processes a test stops or kills.
type givenServer struct {
	dsn    string
	script string // one cheap transaction in the kind's language
	procs  func() []int
}

func startGivenServer(t *testing.T, kind string) givenServer {
	t.Helper()
	ctx := context.Background()
	switch kind {
	case "postgres":
		inst, err := postgres.Start(ctx, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inst.Stop() })
		return givenServer{dsn: inst.ConnString(), script: "SELECT 1;",
			procs: func() []int { return postgres.ServerProcesses(inst.PID()) }}
	case "mariadb":
		inst, err := mdbinstance.Start(ctx, mdbinstance.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inst.Stop() })
		u := url.URL{Scheme: "mysql", User: url.UserPassword(inst.User(), inst.Password()), Host: inst.TCPAddr(), Path: "/" + inst.Database()}
		return givenServer{dsn: u.String(), script: "SELECT 1;", procs: func() []int { return []int{inst.PID()} }}
	case "redis":
		inst, err := redisinstance.Start(ctx, redisinstance.Options{Password: "pw"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inst.Stop() })
		return givenServer{dsn: fmt.Sprintf("redis://:pw@%s/0", inst.Addr()), script: "GET firedrill:k",
			procs: func() []int { return []int{inst.PID()} }}
	}
	t.Fatalf("no server of kind %q", kind)
	return givenServer{}
}

// signalledRun is what a run whose server got signals left.
type signalledRun struct {
	code int
	took time.Duration // from the load's start to firedrill's exit
	run  *timeline.Run
	out  string
}

// runSignalled runs a rate-limited workload of duration on srv with
// firedrill run, sends its processes sig at the load's at and, if thaw
// is above 0, SIGCONT at thaw (otherwise when the run is over).
func runSignalled(t *testing.T, srv givenServer, duration, at, thaw time.Duration, sig syscall.Signal) signalledRun {
	t.Helper()
	tmp := t.TempDir()
	path := filepath.Join(tmp, "s.yaml")
	writeFile(t, path, fmt.Sprintf("name: signalled\nduration: %v\nworkloads:\n  - {name: w, rate: 200, scripts: [{inline: %q}]}\n",
		duration, srv.script))
	out := filepath.Join(tmp, "runs")
	env, stdout, stderr := clikit.MemoryEnv("")
	done := make(chan int, 1)
	go func() {
		done <- Main(env, kinds.Registry(), []string{"run", path, "--dsn", srv.dsn, "--out", out, "--quiet"})
	}()
	// The manifest lists the samplers just before the load starts.
	var runDir string
	if !waitUntil(60*time.Second, func() bool {
		dirs, _ := filepath.Glob(filepath.Join(out, "*"))
		if len(dirs) != 1 {
			return false
		}
		runDir = dirs[0]
		b, err := os.ReadFile(filepath.Join(runDir, timeline.ManifestFile))
		var m timeline.Manifest
		return err == nil && json.Unmarshal(b, &m) == nil && len(m.Samplers) > 0
	}) {
		t.Fatalf("the load never started")
	}
	began := time.Now()
	var signalled []int
	time.AfterFunc(at, func() {
		signalled = srv.procs()
		for _, p := range signalled {
			if err := syscall.Kill(p, sig); err != nil {
				t.Errorf("%v to %d: %v", sig, p, err)
			}
		}
	})
	thawed := make(chan struct{})
	thawAll := func() {
		select {
		case <-thawed:
		default:
			close(thawed)
			for _, p := range signalled {
				_ = syscall.Kill(p, syscall.SIGCONT)
			}
		}
	}
	if sig == syscall.SIGSTOP && thaw > 0 {
		time.AfterFunc(thaw, thawAll)
	}
	code := <-done
	took := time.Since(began)
	if sig == syscall.SIGSTOP {
		thawAll()
	}
	run, err := timeline.Open(runDir)
	if err != nil {
		t.Fatalf("exit %d: %v\n%s%s", code, err, stdout, stderr)
	}
	return signalledRun{code: code, took: took, run: run, out: stdout.String() + stderr.String()}
}

// zeroSpan is the longest stretch of the workload's intervals in which
// no transaction completed.
func zeroSpan(run *timeline.Run) (start, end float64) {
	var from = -1.0
	for _, iv := range run.WorkloadIntervals("w") {
		switch {
		case iv.Count > 0:
			from = -1
		case from < 0:
			from = iv.Start
			fallthrough
		default:
			if iv.End-from > end-start {
				start, end = from, iv.End
			}
		}
	}
	return start, end
}

// near says whether a is b within one tick of the clock (and a little
// for the tick's own lateness).
func near(run *timeline.Run, a, b float64) bool {
	return math.Abs(a-b) <= run.Manifest.Interval+0.25
}

// checkEnd checks what every run whose server stopped answering shares:
// it ends by its deadline, degraded, with exit code 3, and the span its
// workload completed nothing is one outage.
func checkEnd(t *testing.T, r signalledRun, duration time.Duration) timeline.Outage {
	t.Helper()
	t.Logf("exit %d after %v: %s\nfrozen %+v", r.code, r.took.Round(time.Millisecond), r.run.Manifest.Error, r.run.Manifest.Frozen)
	// The deadline, and the report written after it.
	if limit := duration + 5*time.Second + 500*time.Millisecond; r.took > limit {
		t.Errorf("firedrill ran %v after the load's start, more than %v:\n%s", r.took.Round(time.Millisecond), limit, r.out)
	}
	if r.code != clikit.ExitDegraded || r.run.Manifest.Status != timeline.StatusDegraded {
		t.Errorf("exit %d, status %s, want %d and %s:\n%s", r.code, r.run.Manifest.Status, clikit.ExitDegraded, timeline.StatusDegraded, r.out)
	}
	outages := r.run.Outages()
	if len(outages) != 1 {
		t.Fatalf("outages %+v, want one", outages)
	}
	o := outages[0]
	start, end := zeroSpan(r.run)
	t.Logf("no transaction from %.2f s to %.2f s; outage %+v", start, end, o)
	if !near(r.run, o.Start, start) || !near(r.run, o.End, end) || !o.Ended {
		t.Errorf("outage from %.2f s to %.2f s (ended %v), want the span without transactions, %.2f s to %.2f s", o.Start, o.End, o.Ended, start, end)
	}
	return o
}

// A given server that stops answering (SIGSTOP) is one frozen window and
// one outage over the time no transaction completed, recovered if it
// answers again before the end, and the run ends by its deadline,
// degraded (exit 3). Frozen to the end, its settings are not waited for:
// the run changed none.
func TestFrozenGivenServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	const duration = 14 * time.Second
	tests := []struct {
		kind      string
		at, thaw  time.Duration // thaw 0: after the run
		recovered bool
	}{
		{"mariadb", 6 * time.Second, 0, false},
		{"redis", 3 * time.Second, 11 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			t.Parallel()
			r := runSignalled(t, startGivenServer(t, tt.kind), duration, tt.at, tt.thaw, syscall.SIGSTOP)
			o := checkEnd(t, r, duration)
			frozen := r.run.Manifest.Frozen
			if len(frozen) != 1 {
				t.Fatalf("frozen windows %+v, want one", frozen)
			}
			if w := frozen[0]; w.Start != o.Start || w.End != o.End || w.Recovered != tt.recovered || o.Code != "frozen" {
				t.Errorf("frozen window %+v, outage %+v: want the same span, recovered %v", w, o, tt.recovered)
			}
			if strings.Contains(r.out, "settings this run changed") {
				t.Errorf("claims settings were changed:\n%s", r.out)
			}
		})
	}
}

// A given server killed mid-run is an outage to the end of the run, not
// recovered, and the run ends at its end, degraded (exit 3), saying the
// server could not be reached; nothing is restored, as nothing was
// changed.
func TestKilledGivenServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	const duration = 8 * time.Second
	for _, kind := range []string{"postgres", "mariadb", "redis"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := runSignalled(t, startGivenServer(t, kind), duration, 3*time.Second, 0, syscall.SIGKILL)
			o := checkEnd(t, r, duration)
			if !strings.HasPrefix(o.Outcome, "not recovered") || len(r.run.Manifest.Frozen) != 0 ||
				!strings.Contains(r.run.Manifest.Error, "unreachable") || strings.Contains(r.run.Manifest.Error, "settings") {
				t.Errorf("outage %+v, frozen %+v, error %q", o, r.run.Manifest.Frozen, r.run.Manifest.Error)
			}
		})
	}
}
