package redisrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"
)

// redis-fork: save "2 1" on a million 200-byte keys beside 3 SET clients:
// a BGSAVE forks the server.
func TestRedisForkStall(t *testing.T) {
	t.Parallel()
	fs := findingsOf(redisForkStall{}, openRecording(t, "redis-fork"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if !strings.Contains(f.Headline, "fork() stopped Redis") || !strings.Contains(f.Remedy, "transparent huge pages") {
		t.Errorf("%s\n%s", f.Headline, f.Remedy)
	}
	if f.Evidence[0].Series != "redis_info:latest_fork_usec" || f.Evidence[0].Value < forkNoticeMS*1000 {
		t.Errorf("first evidence %+v", f.Evidence[0])
	}
	// No snapshot, no fork: the AOF runs and the others.
	for _, name := range []string{"aof-broken", "aof-fixed", "redis-healthy", "redis-slowcmd", "redis-maxclients"} {
		if fs := findingsOf(redisForkStall{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %s %s", name, fs[0].Severity, fs[0].Headline)
		}
	}
}

// redis-slowcmd: KEYS over 300,000 keys once a second beside SETs.
func TestRedisSlowCommands(t *testing.T) {
	t.Parallel()
	fs := findingsOf(redisSlowCommands{}, openRecording(t, "redis-slowcmd"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Warning || !strings.Contains(f.Headline, "KEYS") {
		t.Errorf("%s %s", f.Severity, f.Headline)
	}
	if !strings.Contains(f.Remedy, "SCAN instead of KEYS") {
		t.Errorf("remedy: %s", f.Remedy)
	}
	var keys bool
	for _, e := range f.Evidence {
		keys = keys || e.Series == "redis_slowlog:command:KEYS" && strings.Contains(e.Text, "KEYS firedrill:key:1*")
	}
	if !keys {
		t.Errorf("no evidence naming the KEYS call: %+v", f.Evidence)
	}
	// On a saturated CPU a few SETs of hundreds of thousands are slow:
	// info at most, and said to be the host's doing.
	for _, name := range []string{"aof-broken", "aof-fixed", "redis-fork", "redis-healthy", "redis-maxclients"} {
		for _, f := range findingsOf(redisSlowCommands{}, openRecording(t, name)) {
			if f.Severity != diagnose.Info || !strings.Contains(f.Headline, "not the commands' work") {
				t.Errorf("%s: %s %s", name, f.Severity, f.Headline)
			}
		}
	}
}

// redis-maxclients: 10 clients and a burst of 12 redis-cli connections
// against maxclients 14.
func TestRedisClientSaturation(t *testing.T) {
	t.Parallel()
	fs := findingsOf(redisClientSaturation{}, openRecording(t, "redis-maxclients"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Critical || !strings.Contains(f.Headline, "refused") || !strings.Contains(f.Headline, "maxclients (14)") {
		t.Errorf("%s %s", f.Severity, f.Headline)
	}
	if f.Evidence[0].Series != "redis_info:rejected_connections" || f.Evidence[0].Value < 1 {
		t.Errorf("first evidence %+v", f.Evidence[0])
	}
	if !strings.Contains(f.Remedy, "connection pool") || !strings.Contains(f.Remedy, "ulimit -n") {
		t.Errorf("remedy: %s", f.Remedy)
	}
	for _, name := range []string{"aof-broken", "aof-fixed", "redis-fork", "redis-healthy", "redis-slowcmd"} {
		if fs := findingsOf(redisClientSaturation{}, openRecording(t, name)); len(fs) != 0 {
			t.Errorf("%s: %s %s", name, fs[0].Severity, fs[0].Headline)
		}
	}
}

// redis-pool-maxclients: a pool of 8 for 100 clients against maxclients
// 6, so the pool could open only some of its connections and ran dry.
// One cause, one finding: redis-client-saturation carries the pool's
// waits; connection-saturation does not repeat it (issue 26), nor name
// PostgreSQL's max_connections.
func TestPoolRefusedByMaxclientsIsOneFinding(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "redis-pool-maxclients")
	if fs := findingsOf(connectionSaturation{}, run); len(fs) != 0 {
		t.Errorf("connection-saturation beside redis-client-saturation: %s %s", fs[0].Severity, fs[0].Headline)
	}
	fs := findingsOf(redisClientSaturation{}, run)
	if len(fs) != 1 || fs[0].Severity != diagnose.Critical {
		t.Fatalf("redis-client-saturation: %+v", fs)
	}
	found := false
	for _, e := range fs[0].Evidence {
		found = found || strings.Contains(e.Text, "pool ran dry while the server refused")
	}
	if !found {
		t.Errorf("the pool's waits are not in the finding's evidence: %+v", fs[0].Evidence)
	}
	// Without the refusals the pool finding stands, in Redis's terms.
	healthy := *run
	healthy.Intervals = nil
	for _, iv := range run.Intervals {
		iv.Refused = nil
		healthy.Intervals = append(healthy.Intervals, iv)
	}
	fs = findingsOf(connectionSaturation{}, &healthy)
	if len(fs) != 1 {
		t.Fatalf("pool finding without refusals: %d findings", len(fs))
	}
	if strings.Contains(fs[0].Remedy, "max_connections") || !strings.Contains(fs[0].Remedy, "maxclients (6)") {
		t.Errorf("remedy not in Redis's terms: %s", fs[0].Remedy)
	}
}
