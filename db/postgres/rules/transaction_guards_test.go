package pgrules

import (
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

func TestTransactionGuardsFires(t *testing.T) {
	t.Parallel()
	fs := findingsOf(transactionGuards{}, openRecording(t, "healthy"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	if f.Severity != diagnose.Info || f.Workload != "tpcb" {
		t.Errorf("severity %s workload %q", f.Severity, f.Workload)
	}
	for _, s := range []string{"tpcb", "statement_timeout: 5s", "idle_in_transaction_session_timeout: 10s"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	if !strings.Contains(f.Remedy, "ALTER ROLE") {
		t.Errorf("remedy: %s", f.Remedy)
	}

	// The server ends idle transactions (idle_in_transaction_session_timeout
	// = 5s); statement_timeout is still missing.
	fs = findingsOf(transactionGuards{}, openRecording(t, "multixact-timeout"))
	if len(fs) != 1 || strings.Contains(fs[0].Headline, "idle_in_transaction") || !strings.Contains(fs[0].Headline, "statement_timeout") {
		t.Errorf("multixact-timeout: %+v", fs)
	}
}

func TestTransactionGuardsQuiet(t *testing.T) {
	t.Parallel()
	// guarded: the workload sets both timeouts on its sessions.
	if fs := findingsOf(transactionGuards{}, openRecording(t, "guarded")); len(fs) != 0 {
		t.Errorf("guarded: %s", fs[0].Headline)
	}
}

func TestTransactionGuardsSettings(t *testing.T) {
	t.Parallel()
	ran := []timeline.Interval{{Workload: "w", Start: 0, End: 1, Count: 5}}
	tests := []struct {
		name     string
		server   map[string]string
		workload map[string]string
		kind     string
		missing  []string // nil: no finding
	}{
		{"nothing set", map[string]string{"statement_timeout": "0", "idle_in_transaction_session_timeout": "0"}, nil, "",
			[]string{"statement_timeout", "idle_in_transaction_session_timeout"}},
		{"the workload sets both", nil, map[string]string{"statement_timeout": "5s", "idle_in_transaction_session_timeout": "10s"}, "", nil},
		{"spelled in upper case, in ms", nil, map[string]string{"STATEMENT_TIMEOUT": "5000", "Idle_In_Transaction_Session_Timeout": "10000ms"}, "", nil},
		{"the server sets both", map[string]string{"statement_timeout": "30s", "idle_in_transaction_session_timeout": "1min"}, nil, "", nil},
		{"the sampler's own statement_timeout does not count",
			map[string]string{"application_name": "firedrill-sampler", "statement_timeout": "800ms", "idle_in_transaction_session_timeout": "10s"}, nil, "",
			[]string{"statement_timeout"}},
		{"the workload turns a server guard off", map[string]string{"statement_timeout": "30s", "idle_in_transaction_session_timeout": "10s"},
			map[string]string{"statement_timeout": "0"}, "", []string{"statement_timeout"}},
		{"transaction_timeout bounds both (PostgreSQL 17)", nil, map[string]string{"transaction_timeout": "20s"}, "", nil},
		{"settings not recorded", nil, nil, "", []string{"statement_timeout", "idle_in_transaction_session_timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run := &timeline.Run{Intervals: ran, Manifest: timeline.Manifest{Settings: tt.server,
				Target:    timeline.Target{Kind: tt.kind},
				Workloads: []timeline.WorkloadInfo{{Name: "w", Settings: tt.workload}}}}
			fs := findingsOf(transactionGuards{}, run)
			if tt.missing == nil {
				if len(fs) != 0 {
					t.Errorf("got %s, want nothing", fs[0].Headline)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("got %d findings, want 1", len(fs))
			}
			for _, g := range []string{guardStatement, guardIdle} {
				want := false
				for _, m := range tt.missing {
					want = want || m == g
				}
				if got := strings.Contains(fs[0].Headline, g); got != want {
					t.Errorf("headline mentions %s: %v, want %v: %s", g, got, want, fs[0].Headline)
				}
			}
		})
	}
}

func TestTimeoutOn(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"0": false, "0ms": false, "'0'": false, "": false, " 0s ": false,
		"5s": true, "800ms": true, "1min": true, "30000": true, "1.5s": true} {
		if got := timeoutOn(v); got != want {
			t.Errorf("timeoutOn(%q) = %v, want %v", v, got, want)
		}
	}
}
