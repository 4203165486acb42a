package kube

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// podRig runs the Job's pod script here, one sh per shard, with stand-ins
// for what the pod would have: a clock (date) that reads a chosen time,
// advancing with the real one, and a firedrill that records the start
// time it was given. The run volume is a directory all shards share.
type podRig struct {
	t      *testing.T
	o      Options
	scen   string // the ConfigMap's files
	runs   string // the run volume
	bin    string // the stand-ins, first on PATH
	script string
}

func newPodRig(t *testing.T, o Options) *podRig {
	t.Helper()
	for _, tool := range []string{"sh", "date", "sort", "tail", "wc", "ls"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the pod script needs it", tool)
		}
	}
	realDate, _ := exec.LookPath("date")
	dir := t.TempDir()
	r := &podRig{t: t, o: o, scen: filepath.Join(dir, "scen"), runs: filepath.Join(dir, "runs"), bin: filepath.Join(dir, "bin")}
	for _, d := range []string{r.scen, r.runs, r.bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	clock := fmt.Sprintf(`#!/bin/sh
# The pod's clock: FAKE_NOW at FAKE_BASE, advancing with the real one.
if [ "$1" = "-u" ] && [ "$2" = "+%%s" ]; then
  echo $((FAKE_NOW + $(%[1]s -u +%%s) - FAKE_BASE))
  exit 0
fi
exec %[1]s "$@"
`, realDate)
	stub := `#!/bin/sh
prev=""
for a in "$@"; do
  case "$prev" in
  --out) out="$a" ;;
  --start-at) start="$a" ;;
  esac
  prev="$a"
done
echo "$start" > "$out/start-at"
`
	for name, text := range map[string]string{"date": clock, "firedrill": stub} {
		if err := os.WriteFile(filepath.Join(r.bin, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.script = PodScript(o, r.scen, r.runs)
	r.setStart(o.StartAt)
	return r
}

// setStart writes the ConfigMap's start time, as `firedrill k8s
// [--restart]` makes it.
func (r *podRig) setStart(at time.Time) {
	if err := os.WriteFile(filepath.Join(r.scen, StartFile), []byte(strconv.FormatInt(at.Unix(), 10)), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

type podResult struct {
	shard int
	exit  int
	start string // the --start-at firedrill got; "" when it did not run
	log   string
}

// apply runs the given shards of the Job whose UID is uid, shard i's
// clock reading nows[i] when it starts; it returns when all have ended.
func (r *podRig) apply(uid string, nows map[int]time.Time) []podResult {
	r.t.Helper()
	base := strconv.FormatInt(time.Now().Unix(), 10)
	var wg sync.WaitGroup
	results := make([]podResult, 0, len(nows))
	var mu sync.Mutex
	for shard, now := range nows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("sh", "-c", r.script)
			cmd.Env = append(os.Environ(), "PATH="+r.bin+":"+os.Getenv("PATH"), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", shard),
				JobUIDEnv+"="+uid, DSNEnv+"=postgres://app@db/x", "FAKE_NOW="+strconv.FormatInt(now.Unix(), 10), "FAKE_BASE="+base)
			var log bytes.Buffer
			cmd.Stdout, cmd.Stderr = &log, &log
			err := cmd.Run()
			res := podResult{shard: shard, log: log.String()}
			if ee, ok := err.(*exec.ExitError); ok {
				res.exit = ee.ExitCode()
			} else if err != nil {
				r.t.Errorf("shard %d: %v", shard, err)
			}
			out := filepath.Join(r.runs, "job-"+uid, fmt.Sprintf("shard-%d", shard))
			if r.o.Results == ResultsLog {
				out = filepath.Join(r.runs, fmt.Sprintf("shard-%d", shard))
			}
			if b, err := os.ReadFile(filepath.Join(out, "start-at")); err == nil {
				res.start = strings.TrimSpace(string(b))
			}
			mu.Lock()
			results = append(results, res)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return results
}

func barrierOptions() Options {
	o := testOptions()
	o.Shards = 4
	o.StartAt = time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	return o
}

// readyAt gives each shard its clock when it starts: from at, one every
// step (image pulls and scheduling vary).
func readyAt(shards int, at time.Time, step time.Duration) map[int]time.Time {
	m := map[int]time.Time{}
	for i := range shards {
		m[i] = at.Add(time.Duration(i) * step)
	}
	return m
}

// The manifest applied as made starts every shard at the ConfigMap's
// start time; the same manifest applied again an hour later (a new Job,
// a new UID) does not start them at that stale time, nor each at its own:
// all start together, StartLead after the last one was ready.
func TestPodScriptReappliedAnHourLaterStartsAllShardsTogether(t *testing.T) {
	t.Parallel()
	o := barrierOptions()
	rig := newPodRig(t, o)
	first := rig.apply("uid-first", readyAt(o.Shards, o.StartAt.Add(-2*time.Minute), 7*time.Second))
	for _, res := range first {
		if res.exit != 0 || res.start != o.StartAt.Format(time.RFC3339) {
			t.Errorf("first application, shard %d: exit %d, start %q; want %s\n%s", res.shard, res.exit, res.start, o.StartAt.Format(time.RFC3339), res.log)
		}
	}

	later := o.StartAt.Add(time.Hour)
	// The last shard is ready at later + 3 × 5 s.
	want := later.Add(15*time.Second + StartLead).Format(time.RFC3339)
	again := rig.apply("uid-again", readyAt(o.Shards, later, 5*time.Second))
	starts := map[string]int{}
	for _, res := range again {
		starts[res.start]++
		if res.exit != 0 {
			t.Errorf("applied again, shard %d: exit %d\n%s", res.shard, res.exit, res.log)
		}
	}
	if len(starts) != 1 || starts[want] != o.Shards {
		t.Errorf("applied again an hour later: start times %v, want all %d shards at %s", starts, o.Shards, want)
	}
}

// A shard that never comes (its pod failed, or was never scheduled)
// makes the others give up at the barrier's timeout with ExitBarrier,
// before any load, so that the Job fails and a wait on it ends.
func TestPodScriptBarrierTimesOut(t *testing.T) {
	t.Parallel()
	o := barrierOptions()
	o.BarrierTimeout = 2 * time.Second
	rig := newPodRig(t, o)
	nows := readyAt(o.Shards-1, o.StartAt.Add(-time.Minute), time.Second) // shard 3 never comes
	for _, res := range rig.apply("uid-short", nows) {
		if res.exit != ExitBarrier || res.start != "" || !strings.Contains(res.log, "3 of 4 shards ready") {
			t.Errorf("shard %d: exit %d, start %q, log %q; want exit %d before firedrill runs", res.shard, res.exit, res.start, res.log, ExitBarrier)
		}
	}
}

// Without a run volume the ConfigMap's start time is all the shards
// share: a shard that finds it passed exits ExitBarrier without load,
// and the ConfigMap `firedrill k8s --restart` writes starts them again.
func TestPodScriptWithoutVolumeRefusesAStaleStart(t *testing.T) {
	t.Parallel()
	o := barrierOptions()
	o.Results, o.Claim, o.NewClaim = ResultsLog, "", false
	rig := newPodRig(t, o)
	later := o.StartAt.Add(time.Hour)
	for _, res := range rig.apply("", readyAt(2, later, time.Second)) {
		if res.exit != ExitBarrier || res.start != "" || !strings.Contains(res.log, "--restart") {
			t.Errorf("stale start, shard %d: exit %d, start %q, log %q", res.shard, res.exit, res.start, res.log)
		}
	}
	fresh := later.Add(2 * time.Minute)
	rig.setStart(fresh)
	for _, res := range rig.apply("", readyAt(2, later, time.Second)) {
		if res.exit != 0 || res.start != fresh.Format(time.RFC3339) {
			t.Errorf("after --restart, shard %d: exit %d, start %q, want %s\n%s", res.shard, res.exit, res.start, fresh.Format(time.RFC3339), res.log)
		}
	}
}
