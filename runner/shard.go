package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/timeline"
)

// Shard is one part of a run split over several processes (machines,
// Kubernetes pods): shard Index of Count, 0 ≤ Index < Count. The zero
// value is a whole run. Shard i runs the execution segment
// [i/Count, (i+1)/Count) of every workload, as k6's execution segments do:
// of v clients it runs floor(v·(i+1)/N) − floor(v·i/N), so the shares add
// up to v exactly and differ by at most one.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/N" (--shard): i is 0-based.
func ParseShard(s string) (Shard, error) {
	hint := `give it as i/N, the 0-based shard index and the number of shards, e.g. --shard 0/4 … --shard 3/4 (in a Kubernetes Indexed Job: --shard $JOB_COMPLETION_INDEX/N)`
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("--shard %q: %s", s, hint)
	}
	i, err := strconv.Atoi(is)
	if err != nil {
		return Shard{}, fmt.Errorf("--shard %q: the index %q is not a number; %s", s, is, hint)
	}
	n, err := strconv.Atoi(ns)
	if err != nil {
		return Shard{}, fmt.Errorf("--shard %q: the number of shards %q is not a number; %s", s, ns, hint)
	}
	if n < 1 {
		return Shard{}, fmt.Errorf("--shard %q: the number of shards must be at least 1", s)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: the index must be from 0 to %d (shards are numbered from 0)", s, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// String is "i/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Split says whether the run is split over more than one shard.
func (s Shard) Split() bool { return s.Count > 1 }

// Leads says whether this shard does what a run does once: setup, events
// and samplers (shard 0, or a whole run).
func (s Shard) Leads() bool { return s.Index == 0 }

// ScaleInt is this shard's share of v whole things (clients): the integers
// of [0, v) whose position falls in the shard's segment.
func (s Shard) ScaleInt(v int) int {
	if !s.Split() {
		return v
	}
	n, i := int64(s.Count), int64(s.Index)
	return int(int64(v)*(i+1)/n - int64(v)*i/n)
}

// shareShape gives this shard its part of a workload's shape (see shape):
// its share of the clients, and under a rate the same rate per client as
// the whole run, so that a shard without clients gets no rate it could
// not run and the shares add up to the whole rate. runs is false when the
// shard has no client of the workload at all.
func (s Shard) shareShape(fn func(time.Duration) (int, float64), clients int, rateModel bool, maxRate float64) (
	_ func(time.Duration) (int, float64), _ int, _ float64, runs bool) {
	if !s.Split() {
		return fn, clients, maxRate, clients > 0
	}
	mine := s.ScaleInt(clients)
	if mine == 0 {
		return nil, 0, 0, false
	}
	part := float64(mine) / float64(clients)
	if fn != nil {
		whole := fn
		fn = func(el time.Duration) (int, float64) {
			c, r := whole(el)
			if rateModel {
				return mine, r * part
			}
			return s.ScaleInt(c), r
		}
	}
	return fn, mine, maxRate * part, true
}

// sharePool is this shard's part of a workload's pool of connections,
// split as clients are so that the shards open as many as one process
// would; at least one, as a pool of 0 means no pool (a connection per
// client). So a pool smaller than the shards grows by the shards that
// would otherwise get none.
func (s Shard) sharePool(pool int) int {
	if pool == 0 || !s.Split() {
		return pool
	}
	return max(1, s.ScaleInt(pool))
}

// shardSeed is a shard's random seed, derived from the run's: splitmix64
// of the seed and the index, so that the shards' streams (and Poisson
// arrivals) are independent and a whole run keeps its seed.
func (s Shard) shardSeed(seed uint64) uint64 {
	if !s.Split() {
		return seed
	}
	z := seed + uint64(s.Index+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// StartLateness is how far past --start-at a shard may find itself and
// still start (at once; merge counts its times from --start-at by the
// began time in its run.json). Later, it refuses: its share of the load
// would be missing from the run's first seconds, and it may start after
// events that were meant to meet the whole load.
const StartLateness = 2 * time.Second

// runKey names a split run for its shards: the scenario, the common
// start and the number of shards, which all its shards share.
func (r *run) runKey() string {
	return fmt.Sprintf("%s@%s/%d", r.sc.Name, r.opts.StartAt.UTC().Format(time.RFC3339Nano), r.opts.Shard.Count)
}

// shardInfo is what run.json says of the shard.
func (r *run) shardInfo() *timeline.ShardInfo {
	if r.opts.Shard.Count == 0 && r.opts.StartAt.IsZero() {
		return nil
	}
	info := &timeline.ShardInfo{Index: r.opts.Shard.Index, Count: max(r.opts.Shard.Count, 1), StartAt: r.opts.StartAt.UTC()}
	if !r.opts.StartAt.IsZero() {
		info.Run = r.runKey()
	}
	return info
}

// CheckShard refuses a shard option that cannot work: a split run needs
// --start-at (so that the shards' schedules line up) and a server the
// shards share, and a --start-at already past.
func CheckShard(opts Options, now time.Time) error {
	if opts.Shard.Split() && opts.StartAt.IsZero() {
		return fmt.Errorf("--shard %s needs --start-at: the shards start their load together at that moment (RFC 3339, e.g. --start-at %s)",
			opts.Shard, now.Add(time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	if opts.Shard.Split() && len(opts.Scenario.Targets) > 0 {
		var embedded []string
		for _, t := range opts.Scenario.Targets {
			if t.Target.DSN == "" {
				embedded = append(embedded, t.Name)
			}
		}
		if len(embedded) > 0 {
			return fmt.Errorf("--shard %s: the shards must drive the same servers: give %s one with --dsn NAME=URL or its dsn (each shard would otherwise start its own embedded server)",
				opts.Shard, strings.Join(embedded, ", "))
		}
	} else if opts.Shard.Split() && opts.DSN == "" && opts.Scenario.Target.DSN == "" {
		return fmt.Errorf("--shard %s: the shards must drive one server: give it with --dsn or the scenario's target.dsn (each shard would otherwise start its own embedded server)", opts.Shard)
	}
	if !opts.StartAt.IsZero() {
		if late := now.Sub(opts.StartAt); late > StartLateness {
			return fmt.Errorf("--start-at %s is %.1f s past (now %s); a shard may start at most %v late: give every shard a later --start-at",
				opts.StartAt.UTC().Format(time.RFC3339Nano), late.Seconds(), now.UTC().Format(time.RFC3339), StartLateness)
		}
	}
	return nil
}

// setup runs each target's setup on shard 0 (or a whole run) and tells
// the other shards, which wait for it, through a mark on each server: a
// shard's own run directory is on its own machine, the servers are what
// they share. A target that cannot keep a mark (backend.SetupMarker) has
// the other shards rely on --start-at alone, with a warning.
func (r *run) setup(ctx context.Context) error {
	for _, tr := range r.targets {
		if err := r.setupTarget(ctx, tr); err != nil {
			return targetErr(tr, err)
		}
	}
	return nil
}

// setupTarget runs one target's setup on shard 0 and marks it done, or
// waits on another shard for that mark.
func (r *run) setupTarget(ctx context.Context, tr *targetRun) error {
	tgt := tr.tgt
	sh := r.opts.Shard
	if tr.keep.Reused() {
		r.logf("%ssetup: skipped: the server kept from the run before has it", tr.prefix())
		return nil
	}
	if sh.Leads() {
		if err := tgt.Setup(ctx); err != nil {
			return err
		}
		if !sh.Split() {
			return nil
		}
		if m, ok := tgt.(backend.SetupMarker); ok {
			if err := m.MarkSetupDone(ctx, r.runKey()); err != nil {
				return fmt.Errorf("shard %s: record that setup is done for the other shards: %w", sh, err)
			}
		}
		return nil
	}
	if sl, ok := tgt.(backend.Setupless); ok && sl.Setupless() {
		return nil // nothing to wait for
	}
	m, ok := tgt.(backend.SetupMarker)
	if !ok {
		r.logf("shard %s: %sthis kind of server cannot hold a mark that setup is done; starting at --start-at whether or not shard 0's setup is", sh, tr.prefix())
		return nil
	}
	giveUp := r.opts.StartAt.Add(StartLateness)
	lastSaid := time.Time{}
	for {
		done, err := m.SetupDone(ctx, r.runKey())
		if err != nil {
			return fmt.Errorf("shard %s: look for shard 0's setup: %w", sh, err)
		}
		if done {
			return nil
		}
		now := time.Now()
		if now.After(giveUp) {
			return fmt.Errorf("shard %s: shard 0 had not finished setup %v after --start-at %s; is shard 0 running with the same scenario, --shard 0/%d and --start-at? Give a later --start-at if its setup takes longer",
				sh, StartLateness, r.opts.StartAt.UTC().Format(time.RFC3339Nano), sh.Count)
		}
		if now.Sub(lastSaid) >= 5*time.Second {
			r.logf("shard %s: %swaiting for shard 0's setup", sh, tr.prefix())
			lastSaid = now
		}
		// Often near the start, so a shard is not late by its polling;
		// seldom before, not to open a connection every moment on the
		// server for each of many shards during a long setup.
		poll := 2 * time.Second
		if time.Until(r.opts.StartAt) < 5*time.Second {
			poll = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// waitStartAt waits until --start-at, saying every few seconds how long
// is left; a shard past it by more than StartLateness refuses to start.
func (r *run) waitStartAt(ctx context.Context) error {
	at := r.opts.StartAt
	if at.IsZero() {
		return nil
	}
	if late := time.Since(at); late > StartLateness {
		return fmt.Errorf("shard %s: --start-at %s passed %.1f s ago, before this shard was ready (setup, connecting): give every shard a later --start-at",
			r.opts.Shard, at.UTC().Format(time.RFC3339Nano), late.Seconds())
	}
	for {
		left := time.Until(at)
		if left <= 0 {
			return nil
		}
		r.logf("shard %s: starting the load at %s, in %.0f s", r.opts.Shard, at.UTC().Format(time.RFC3339), left.Seconds())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(left, 10*time.Second)):
		}
	}
}
