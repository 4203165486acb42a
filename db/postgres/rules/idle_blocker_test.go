package pgrules

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

func TestIdleBlockerFiresOnlyOnItsRecording(t *testing.T) {
	t.Parallel()
	// hotrow and stock-* have chain heads idle in transaction between two
	// statements of a fast transaction: they must stay silent.
	firesOnlyOn(t, idleBlocker{}, "idleblock")
}

func TestIdleBlockerNamesTheSession(t *testing.T) {
	t.Parallel()
	fs := findingsOf(idleBlocker{}, openRecording(t, "idleblock"))
	if len(fs) != 1 {
		t.Fatalf("got %d findings, want 1", len(fs))
	}
	f := fs[0]
	for _, s := range []string{"idle in transaction", "firedrill-event:forgotten-tx", "UPDATE counter SET n = n + 1 WHERE id = 1", "8 sessions waiting"} {
		if !strings.Contains(f.Headline, s) {
			t.Errorf("headline lacks %q: %s", s, f.Headline)
		}
	}
	if !strings.Contains(f.Remedy, "pg_terminate_backend(") || !strings.Contains(f.Remedy, "idle_in_transaction_session_timeout") {
		t.Errorf("remedy: %s", f.Remedy)
	}
	// The hold runs from 10 s to 25 s.
	if f.Start < 9 || f.Start > 11 || f.End < 23 || f.End > 26 {
		t.Errorf("window [%.1f, %.1f], want about [10, 25]", f.Start, f.End)
	}
}

// idleChain is a run with one lock sample a second in which pid 9, in
// state, blocks pid 10, which has waited waitAt(t).
func idleChain(state string, waitAt func(t int) float64) *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Interval: 1}}
	for t := 0; t <= 10; t++ {
		pairs := []pgmetric.BlockingPair{{BlockedPID: 10, WaitS: waitAt(t), LockType: "transactionid",
			BlockingPID: 9, BlockingState: state, BlockingQuery: "UPDATE t SET n = 1 WHERE id = 1"}}
		d, _ := json.Marshal(pairs)
		run.Samples = append(run.Samples, timeline.Sample{Source: "locks", T: float64(t), Detail: d,
			Values: map[string]float64{"blocked": 1}})
	}
	return run
}

func TestIdleBlockerThresholds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		state string
		wait  func(t int) float64
		want  int
	}{
		{"short waits behind an idle head", "idle in transaction", func(int) float64 { return 0.05 }, 0},
		{"one long wait", "idle in transaction", func(t int) float64 { return map[bool]float64{true: 1.5}[t == 5] }, 0},
		{"long waits behind an active head", "active", func(t int) float64 { return float64(t) }, 0},
		{"long waits behind an idle head", "idle in transaction", func(t int) float64 { return float64(t) }, 1},
		{"aborted and idle", "idle in transaction (aborted)", func(t int) float64 { return float64(t) }, 1},
	}
	for _, tt := range tests {
		if got := len(findingsOf(idleBlocker{}, idleChain(tt.state, tt.wait))); got != tt.want {
			t.Errorf("%s: %d findings, want %d", tt.name, got, tt.want)
		}
	}
}
