package redisrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"
)

// aof-broken: the aof drill's broken variant (quick): 5 clients SET with
// appendfsync everysec, the slow disk on from 7.5 to 22.5 s.
// aof-fixed: the same with appendfsync no around the copy.

func TestAOFFsyncStallFires(t *testing.T) {
	t.Parallel()
	fs := findingsOf(aofFsyncStall{}, openRecording(t, "aof-broken"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Warning && f.Severity != diagnose.Critical {
		t.Errorf("severity %s", f.Severity)
	}
	// The finding's window is the copy's, not the whole run.
	if f.Start < 5 || f.End > 27 {
		t.Errorf("window %.1f–%.1f s, want within the copy (7.5–22.5 s) and the 2 s after", f.Start, f.End)
	}
	for _, s := range []string{"AOF fsync", "stalled up to", "delayed fsync", "aof-write-pending-fsync", "slow log"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	series := map[string]string{}
	for _, e := range f.Evidence {
		series[e.Series] = e.Text
	}
	for _, s := range []string{"redis_info:aof_delayed_fsync", "redis_latency:aof-write-pending-fsync.max_ms", "workload:cache.max_latency",
		"redis_slowlog:new_entries", "event:backup-copy", "settings:appendfsync"} {
		if _, ok := series[s]; !ok {
			t.Errorf("no evidence from %s: %+v", s, f.Evidence)
		}
	}
	if text := series["redis_slowlog:new_entries"]; !strings.Contains(text, "times only a command's execution") {
		t.Errorf("the slow log evidence does not say why it misses the stall: %s", text)
	}
	if text := series["workload:cache.max_latency"]; !strings.Contains(text, "within 2 s of a delayed fsync") || !strings.Contains(text, "about every") {
		t.Errorf("the client evidence does not line the stalls up: %s", text)
	}
	for _, s := range []string{"appendfsync no", "disk of its own", `save ""`, "auto-aof-rewrite-percentage 0", "timeouts"} {
		if !strings.Contains(f.Remedy, s) {
			t.Errorf("remedy lacks %q: %s", s, f.Remedy)
		}
	}
}

// With appendfsync no around the copy nothing is fsynced late; a healthy
// AOF run, the other Redis runs and PostgreSQL's have nothing to say.
func TestAOFFsyncStallQuiet(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"aof-fixed", "redis-healthy", "redis-slowcmd", "redis-fork", "redis-maxclients", "healthy", "commit"} {
		if fs := findingsOf(aofFsyncStall{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %s %s", name, fs[0].Severity, fs[0].Headline)
		}
	}
}
