package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	postgres "github.com/firedrill/firedrill/db/postgres/instance"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// A server that stops answering for a while (every process stopped with
// SIGSTOP from 3 s, continued about 3 s later) leaves the samplers' reads
// unanswered: each failed read of the server records the stall and its
// length so far, and the log says so once, when the server answers again,
// not once per sampler.
func TestSamplersRecordAStall(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("stall.yaml", []byte("name: stall\nduration: 10s\nworkloads:\n  - {name: reads, clients: 2, scripts: [{inline: \"SELECT 1;\"}]}\n"),
		kinds.Registry().ScenarioOptions())
	if err != nil {
		t.Fatal(err)
	}
	log := &timedLog{start: time.Now()}
	stopped := make(chan []int, 1)
	cont := func(procs []int) {
		for _, p := range procs {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}
	opts := Options{Scenario: sc, Backends: kinds.Registry(), RunDir: filepath.Join(t.TempDir(), "run"), Log: log,
		OnStart: func(dir string) {
			pid := postmasterPID(t, readManifest(t, dir).Target.DataDir)
			time.AfterFunc(3*time.Second, func() {
				procs := postgres.ServerProcesses(pid)
				for _, p := range procs {
					if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
						t.Errorf("SIGSTOP server process %d: %v", p, err)
					}
				}
				fmt.Fprintf(log, "test: stopped the server's %d processes\n", len(procs))
				time.AfterFunc(3*time.Second, func() {
					cont(procs)
					fmt.Fprintf(log, "test: continued them\n")
				})
				stopped <- procs
			})
		}}
	t.Cleanup(func() {
		select {
		case procs := <-stopped:
			cont(procs) // a second SIGCONT is harmless
		default:
		}
	})
	res, err := Run(context.Background(), opts)
	t.Logf("log:\n%s", log.String())
	if res == nil {
		t.Fatalf("Run: %v", err)
	}
	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var stalled []timeline.Sample
	for _, s := range run.Samples {
		if s.Stall > 0 {
			stalled = append(stalled, s)
			if s.Error == "" {
				t.Errorf("a read that did not fail marked a stall: %+v", s)
			}
		}
	}
	if len(stalled) == 0 {
		t.Fatalf("no read recorded the stall")
	}
	longest := 0.0
	for _, s := range stalled {
		if s.T < 2 || s.T > 8 {
			t.Errorf("a stall recorded at %.1f s, outside the stop (3 s to about 6 s)", s.T)
		}
		longest = max(longest, s.Stall)
	}
	if longest < 1.5 || longest > 5 {
		t.Errorf("the longest stall recorded is %.1f s, want about 3 s", longest)
	}
	if n := strings.Count(log.String(), "left firedrill's samplers unanswered"); n != 1 {
		t.Errorf("the stall is told %d times in the log, want once", n)
	}
}
