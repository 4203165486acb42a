package httptarget_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/firedrill/firedrill/db/http/httpdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// The open model keeps its rate against a real local service: every start
// its Poisson schedule places before the end is sent and answered, on one
// event loop and on two. A run that lost starts — requests due while the
// loop was busy, a timer that woke late, a pacer whose count drifted —
// would fall short of the schedule; 2 % short fails. The schedule itself
// is checked against rate × duration (it is a Poisson draw: ±4σ).
func TestOpenModelKeepsTheSchedule(t *testing.T) {
	t.Parallel()
	srv := newService(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond) // requests overlap: a client each
		fmt.Fprint(w, "ok")
	}), false)
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("j%d", threads), func(t *testing.T) {
			t.Parallel()
			syms := script.NewSymbols()
			s, err := script.ParseDialect("rate.http", []byte("GET /\n"), syms, httpdialect.Script())
			if err != nil {
				t.Fatal(err)
			}
			target := newTarget(t, srv.URL, nil)
			target.Prepare([]*script.Script{s})
			cfg := engine.Config{Scripts: []*script.Script{s}, Symbols: syms, Clients: 20, Threads: threads,
				Rate: 1500, Duration: 4 * time.Second, RandomSeed: uint64(threads), MaxTries: 1, ContinueOnError: true}
			scheduled := engine.ScheduledStarts(cfg)
			mean := cfg.Rate * cfg.Duration.Seconds()
			if d := float64(scheduled) - mean; d*d > 16*mean {
				t.Fatalf("%d starts scheduled, want %.0f ± 4σ", scheduled, mean)
			}
			res, err := engine.Run(context.Background(), target, cfg)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			tot := res.Totals.Total
			if f := tot.Failures(); f > 0 {
				t.Fatalf("%d requests failed: %v", f, res.Errors)
			}
			// Generous: the last ~60 ms of the schedule may be lost to a
			// loop that wakes late at the end on a busy machine.
			if tot.Count > scheduled || float64(tot.Count) < 0.985*float64(scheduled) {
				t.Errorf("-j %d: %d requests answered of %d scheduled (%+.2f %%), want all of them (−1.5 %% at most)",
					threads, tot.Count, scheduled, 100*(float64(tot.Count)-float64(scheduled))/float64(scheduled))
			}
			t.Logf("-j %d: %d answered of %d scheduled (rate × duration %.0f)", threads, tot.Count, scheduled, mean)
		})
	}
}
