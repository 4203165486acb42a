// Package backendtest holds what the backends' tests share: a whole run
// of a scenario on a server given with --dsn, as a user's run would be.
package backendtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// RunOnGivenServer runs the scenario src (as if read from users.yaml) on
// the server dsn, cancelled (as by Ctrl-C) after cancelAt when that is
// above 0, and fails t unless the run completed or, when cancelled, says
// it was interrupted. It returns the run's result and log, for the
// caller's checks of what the run left on the server.
func RunOnGivenServer(t *testing.T, src, dsn string, cancelAt time.Duration) (*runner.Result, string) {
	t.Helper()
	sc, err := scenario.Parse("users.yaml", []byte(src), kinds.Registry().ScenarioOptionsFor(dsn))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if cancelAt > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		time.AfterFunc(cancelAt, cancel)
	}
	var log strings.Builder
	begin := time.Now()
	res, err := runner.Run(ctx, runner.Options{Scenario: sc, Backends: kinds.Registry(), DSN: dsn, RunDir: t.TempDir(), Log: &log})
	t.Logf("run took %v:\n%s", time.Since(begin), log.String())
	switch {
	case cancelAt > 0:
		if err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Errorf("a cancelled run: %v, want it interrupted", err)
		}
	case err != nil:
		t.Fatalf("run: %v", err)
	case res.Manifest.Status != timeline.StatusCompleted:
		t.Errorf("status %s", res.Manifest.Status)
	}
	return res, log.String()
}
