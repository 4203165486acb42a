package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/firedrill/firedrill/runner"
	"github.com/firedrill/firedrill/scenario"
)

// shardFlags are run's --shard and --start-at: one process's part of a
// run split over several (machines, a Kubernetes Indexed Job).
type shardFlags struct {
	shard   string
	startAt string
}

func (s *shardFlags) add(f *pflag.FlagSet) {
	f.StringVar(&s.shard, "shard", "", "run shard i of N (0-based, e.g. 2/4): its share of every workload's clients and rate; setup, events and samplers on shard 0 only; merge the shards' run directories with 'firedrill merge'")
	f.StringVar(&s.startAt, "start-at", "", "start the load at this moment (RFC 3339, e.g. 2026-11-25T07:00:00Z), the same for every shard; setup is done before it")
}

// apply puts the flags into the run's options (whose Scenario and DSN are
// set) and checks them.
func (s *shardFlags) apply(o *runner.Options) error {
	if s.shard != "" {
		sh, err := runner.ParseShard(s.shard)
		if err != nil {
			return err
		}
		o.Shard = sh
	}
	if s.startAt != "" {
		at, err := time.Parse(time.RFC3339Nano, s.startAt)
		if err != nil {
			return fmt.Errorf("--start-at %q: not an RFC 3339 time; give it as e.g. %s (UTC) or with an offset (+01:00)",
				s.startAt, time.Now().Add(time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339))
		}
		o.StartAt = at
	}
	return runner.CheckShard(*o, time.Now()) // before anything is printed; Run checks again
}

// thresholds are the scenario's thresholds to judge at the end of run:
// none on a shard of a split run, whose share of the load would fail
// thresholds meant for the whole (and fail its pod); 'firedrill merge'
// judges them on the merged run.
func (s *shardFlags) thresholds(sc *scenario.Scenario, stderr io.Writer) []scenario.Threshold {
	if len(sc.Thresholds) == 0 || s.shard == "" {
		return sc.Thresholds
	}
	if sh, err := runner.ParseShard(s.shard); err == nil && sh.Split() {
		fmt.Fprintf(stderr, "firedrill: shard %s: the scenario's %d thresholds are judged on the merged run ('firedrill merge'), not on one shard\n", sh, len(sc.Thresholds))
		return nil
	}
	return sc.Thresholds
}
