package redis

import (
	"bufio"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/redis/redisconn"
	rm "github.com/firedrill/firedrill/db/redis/redismetric"
)

// reply decodes RESP2 text written with "\n" for CRLF.
func reply(t testing.TB, text string) redisconn.Reply {
	t.Helper()
	r, err := redisconn.ReadReply(bufio.NewReader(strings.NewReader(strings.ReplaceAll(text, "\n", "\r\n"))))
	if err != nil {
		t.Fatalf("ReadReply(%q): %v", text, err)
	}
	return r
}

func TestParseInfo(t *testing.T) {
	t.Parallel()
	got := parseInfo("# Persistence\r\naof_enabled:1\r\naof_last_write_status:ok\r\n\r\n# Stats\nno colon here\n:empty name\nmaster_replid:ab:cd\r\n")
	want := map[string]string{"aof_enabled": "1", "aof_last_write_status": "ok", "master_replid": "ab:cd"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseInfo = %v, want %v", got, want)
	}
	if _, ok := infoNumber(map[string]string{"x": "NaN"}, "x"); ok {
		t.Error("NaN read as a number")
	}
	if _, ok := infoNumber(map[string]string{"x": "+Inf"}, "x"); ok {
		t.Error("+Inf read as a number")
	}
}

func TestParseCommandStats(t *testing.T) {
	t.Parallel()
	fields := parseInfo("# Commandstats\r\n" +
		"cmdstat_set:calls=10,usec=50,usec_per_call=5.00,rejected_calls=1,failed_calls=2\r\n" +
		"cmdstat_client|kill:calls=1,usec=7,usec_per_call=7.00\r\n" + // before Redis 6.2: no rejected/failed
		"cmdstat_broken:usec=3\r\n" + // no calls: left out
		"cmdstat_neg:calls=-1\r\n")
	got := parseCommandStats(fields)
	want := map[string]commandStat{
		"set":         {calls: 10, usec: 50, rejected: 1, failed: 2},
		"client|kill": {calls: 1, usec: 7},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseCommandStats = %v, want %v", got, want)
	}
}

func TestParseLatency(t *testing.T) {
	t.Parallel()
	latest, err := parseLatencyLatest(reply(t, "*2\n*4\n$23\naof-write-pending-fsync\n:1764036000\n:330\n:512\n*5\n$4\nfork\n:1764036001\n:12\n:40\n:52\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []latestEntry{{"aof-write-pending-fsync", 1764036000, 330, 512}, {"fork", 1764036001, 12, 40}}
	if !reflect.DeepEqual(latest, want) {
		t.Errorf("parseLatencyLatest = %+v, want %+v", latest, want)
	}
	history, err := parseLatencyHistory(reply(t, "*2\n*2\n:1764035997\n:512\n*2\n:1764036000\n:330\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(history, []historyPoint{{1764035997, 512}, {1764036000, 330}}) {
		t.Errorf("parseLatencyHistory = %+v", history)
	}
	for _, bad := range []string{"+OK\n", "*1\n*3\n$4\nfork\n:1\n:2\n", "*1\n*4\n:1\n:1\n:2\n:3\n", "*1\n*4\n$4\nfork\n:1\n:-2\n:3\n"} {
		if _, err := parseLatencyLatest(reply(t, bad)); err == nil {
			t.Errorf("parseLatencyLatest(%q) succeeded", bad)
		}
	}
	if _, err := parseLatencyHistory(reply(t, "*1\n*2\n:1\n$1\nx\n")); err == nil {
		t.Error("parseLatencyHistory of a string latency succeeded")
	}
	now, err := parseTime(reply(t, "*2\n$10\n1764036000\n$6\n250000\n"))
	if err != nil || now != 1764036000.25 {
		t.Errorf("parseTime = %v, %v; want 1764036000.25", now, err)
	}
	for _, bad := range []string{":1\n", "*2\n:1\n:2\n", "*2\n$1\n1\n$2\n-2\n", "*1\n$1\n1\n"} {
		if _, err := parseTime(reply(t, bad)); err == nil {
			t.Errorf("parseTime(%q) succeeded", bad)
		}
	}
}

func TestParseSlowlog(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 40) // 80 bytes: cut at 64 on a character boundary
	entries, err := parseSlowlog(reply(t, "*2\n"+
		"*6\n:7\n:1764036000\n:15000\n*3\n$3\nSET\n$1\nk\n$80\n"+long+"\n$15\n127.0.0.1:50000\n$4\nload\n"+
		"*4\n:6\n:1764035999\n:12000\n*1\n$4\nKEYS\n")) // before Redis 4.0: no client
	if err != nil {
		t.Fatal(err)
	}
	want := []rm.SlowlogEntry{
		{ID: 7, Unix: 1764036000, DurationUS: 15000, Args: []string{"SET", "k", strings.Repeat("é", 32) + "…"}, Client: "127.0.0.1:50000", ClientName: "load"},
		{ID: 6, Unix: 1764035999, DurationUS: 12000, Args: []string{"KEYS"}},
	}
	if !reflect.DeepEqual(entries, want) {
		t.Errorf("parseSlowlog =\n%+v\nwant\n%+v", entries, want)
	}
	if _, err := parseSlowlog(reply(t, "*1\n*4\n:1\n:2\n:3\n$3\nSET\n")); err == nil {
		t.Error("parseSlowlog with arguments that are not an array succeeded")
	}
}

// FuzzInfo: INFO text from any server (or anything claiming to be one)
// parses without panicking into finite numbers.
func FuzzInfo(f *testing.F) {
	f.Add("# Persistence\r\naof_enabled:1\r\naof_delayed_fsync:3\r\n")
	f.Add("cmdstat_set:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\ncmdstat_x:calls=NaN\r\n")
	f.Fuzz(func(t *testing.T, text string) {
		fields := parseInfo(text)
		for field := range fields {
			if field == "" || strings.ContainsAny(field, "\n") {
				t.Errorf("field %q", field)
			}
			if v, ok := infoNumber(fields, field); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
				t.Errorf("%s = %v", field, v)
			}
		}
		for cmd, st := range parseCommandStats(fields) {
			for _, v := range []float64{st.calls, st.usec, st.rejected, st.failed} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Errorf("%s: %+v", cmd, st)
				}
			}
		}
	})
}

// FuzzReplies: any RESP2 reply given to the latency and slow log parsers
// is read or refused, never a panic, and what is read is never negative.
func FuzzReplies(f *testing.F) {
	f.Add([]byte("*1\r\n*4\r\n$4\r\nfork\r\n:1764036001\r\n:12\r\n:40\r\n"))
	f.Add([]byte("*1\r\n*2\r\n:1764035997\r\n:512\r\n"))
	f.Add([]byte("*2\r\n$10\r\n1764036000\r\n$6\r\n250000\r\n"))
	f.Add([]byte("*1\r\n*6\r\n:7\r\n:1764036000\r\n:15000\r\n*1\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := redisconn.ReadReply(bufio.NewReader(strings.NewReader(string(data))))
		if err != nil {
			return
		}
		if latest, err := parseLatencyLatest(r); err == nil {
			for _, e := range latest {
				if e.event == "" || e.latest < 0 || e.max < 0 {
					t.Errorf("LATEST row %+v", e)
				}
			}
		}
		if history, err := parseLatencyHistory(r); err == nil {
			for _, p := range history {
				if p.ms < 0 {
					t.Errorf("HISTORY row %+v", p)
				}
			}
		}
		if now, err := parseTime(r); err == nil && now < 0 {
			t.Errorf("TIME %v", now)
		}
		if entries, err := parseSlowlog(r); err == nil {
			for _, e := range entries {
				if e.ID < 0 || e.DurationUS < 0 {
					t.Errorf("SLOWLOG entry %+v", e)
				}
				for _, a := range e.Args {
					if len(a) > slowlogArgLen+len("…") {
						t.Errorf("argument of %d bytes", len(a))
					}
				}
			}
		}
	})
}
