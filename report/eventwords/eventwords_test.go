package eventwords

import "testing"

// An event's detail reads as words: who first (pid, application name,
// xid), then the rest alphabetically; units from the key's suffix after
// the value; ids and counts without decimals; nested settings as named.
func TestDetail(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		detail map[string]any
		want   string
	}{
		{"a hold's start mark", map[string]any{"application_name": "firedrill-event:hold", "pid": 15920.0, "txid": "47215", "xid": "47215"},
			"pid 15920, application name firedrill-event:hold, xid 47215, txid 47215"},
		{"units from the key", map[string]any{"held_seconds": 4.997, "fsync_delay_ms": 250.0, "bytes": 1024.0},
			"bytes 1024, fsync delay 250 ms, held 5.0 s"},
		{"booleans, lists, nested settings", map[string]any{"restart": true, "pids": []any{1.0, 2.0}, "changed": map[string]any{"work_mem": "64MB"}},
			"changed (work_mem 64MB), pids [1, 2], restart yes"},
		{"empty and null", map[string]any{"cause": "", "mode": nil}, `cause "", mode none`},
	} {
		if got := Detail(c.detail); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
