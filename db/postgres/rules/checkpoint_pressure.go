package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// checkpointPressure finds checkpoints forced by WAL volume rather than
// by the clock: the checkpointer starts one whenever the WAL written
// since the last one nears max_wal_size, so a write burst against a small
// max_wal_size makes checkpoints back to back, each followed by a wave of
// full-page images that writes yet more WAL.
//
// The thresholds are PostgreSQL's own and the field's best-known alert:
//   - checkpoint_warning (30 s by default): the server logs "checkpoints
//     are occurring too frequently" when checkpoints requested by WAL
//     volume come closer than this; the rule fires on two requested
//     checkpoints within it, when the WAL rate between them would fill
//     max_wal_size/(1 + checkpoint_completion_target) — the volume that
//     triggers a checkpoint — within checkpoint_warning too, so a manual
//     CHECKPOINT or two on a quiet server does not count;
//   - awesome-prometheus-alerts' "Postgresql too many checkpoints
//     requested" (postgres_exporter metrics) warns when fewer than half
//     of the checkpoints are timed; the evidence gives that split.
type checkpointPressure struct{}

var _ diagnose.Rule = checkpointPressure{}

func (checkpointPressure) ID() string { return "checkpoint-pressure" }

// Inputs names the sources the rule reads: checkpoints and WAL, and the
// settings as settings events changed them.
func (checkpointPressure) Inputs() diagnose.Inputs {
	return diagnose.Inputs{AnyOf: []string{pgmetric.WAL}, Also: []string{pgmetric.Settings}}
}

// Defaults of the settings the rule reads, as PostgreSQL ships them.
const (
	defaultCheckpointWarningS = 30
	defaultCheckpointTimeoutS = 300
	defaultCompletionTarget   = 0.9
	defaultMaxWALBytes        = 1 << 30
)

// checkpointStretch is a run of requested checkpoints each less than
// checkpoint_warning after the one before.
type checkpointStretch struct {
	From, To  float64 // the first tick with one, the last
	Requested float64
	Timed     float64
	WALBytes  float64 // written over [From−tick, To]
	Buffers   float64 // written by checkpoints over the same span
	FPIPerS   float64 // mean
	PeakRate  float64 // bytes/s
	PeakT     float64
}

func (s checkpointStretch) span(tick float64) float64 { return s.To - s.From + tick }

// rate is the mean WAL rate over the stretch, bytes/s.
func (s checkpointStretch) rate(tick float64) float64 { return s.WALBytes / s.span(tick) }

// interval is the mean time between the stretch's requested checkpoints.
func (s checkpointStretch) interval(tick float64) float64 { return s.span(tick) / s.Requested }

func (r checkpointPressure) Check(run *timeline.Run) []diagnose.Finding {
	tick := diagnose.Tick(run)
	req := run.Series(pgmetric.WAL, pgmetric.CheckpointsReq)
	var stretches []checkpointStretch
	var cur *checkpointStretch
	for _, p := range req {
		if p.V <= 0 {
			continue
		}
		warnS := r.warningS(run, p.T)
		if cur != nil && p.T-cur.To < warnS {
			cur.To = p.T
			cur.Requested += p.V
			continue
		}
		stretches = append(stretches, checkpointStretch{From: p.T, To: p.T, Requested: p.V})
		cur = &stretches[len(stretches)-1]
	}
	var out []diagnose.Finding
	for _, s := range stretches {
		if s.Requested < 2 {
			continue
		}
		r.measure(run, &s, tick)
		trigger := r.triggerBytes(run, s.From)
		if s.rate(tick)*r.warningS(run, s.From) < trigger {
			continue // not WAL volume: CHECKPOINT commands, a restart
		}
		out = append(out, r.finding(run, s, trigger))
	}
	return out
}

// warningS is checkpoint_warning at t, in seconds (30 when off or unknown:
// the server's default is the field's yardstick).
func (checkpointPressure) warningS(run *timeline.Run, t float64) float64 {
	if v, ok := pgSeconds(settingAt(run, "checkpoint_warning", t, ""), 1); ok && v > 0 {
		return v
	}
	return defaultCheckpointWarningS
}

// triggerBytes is the WAL volume after which the checkpointer starts a
// checkpoint: max_wal_size / (1 + checkpoint_completion_target).
func (r checkpointPressure) triggerBytes(run *timeline.Run, t float64) float64 {
	return r.maxWAL(run, t) / (1 + r.completion(run, t))
}

func (checkpointPressure) maxWAL(run *timeline.Run, t float64) float64 {
	if v, ok := pgBytes(settingAt(run, "max_wal_size", t, ""), 1<<20); ok && v > 0 {
		return v
	}
	return defaultMaxWALBytes
}

func (checkpointPressure) completion(run *timeline.Run, t float64) float64 {
	if v, ok := parsePGUnit(settingAt(run, "checkpoint_completion_target", t, ""), nil, 1); ok && v > 0 && v <= 1 {
		return v
	}
	return defaultCompletionTarget
}

func (checkpointPressure) timeoutS(run *timeline.Run, t float64) float64 {
	if v, ok := pgSeconds(settingAt(run, "checkpoint_timeout", t, ""), 1); ok && v > 0 {
		return v
	}
	return defaultCheckpointTimeoutS
}

// measure adds up the WAL and checkpoint counters over the stretch: from
// the interval in which its first checkpoint was requested to its last.
func (checkpointPressure) measure(run *timeline.Run, s *checkpointStretch, tick float64) {
	from, to := s.From-tick+1e-6, s.To+1e-6
	fpi := 0.0
	n := 0
	for _, smp := range run.SourceSamples(pgmetric.WAL) {
		if smp.T < from || smp.T > to || smp.Error != "" {
			continue
		}
		rate := smp.Values[pgmetric.WALBytesPerS]
		s.WALBytes += rate * tick
		s.Timed += smp.Values[pgmetric.CheckpointsTimed]
		s.Buffers += smp.Values[pgmetric.BuffersCheckpoint]
		fpi += smp.Values[pgmetric.WALFPIPerS]
		n++
	}
	// The peak is of medians of a few samples: one sample can hold a
	// batched stats flush (issue 26: "peak 265.7 MiB/s" between 30–45 MiB/s).
	s.PeakRate, s.PeakT = diagnose.PeakOfMedians(run.Series(pgmetric.WAL, pgmetric.WALBytesPerS), from, to)
	if n > 0 {
		s.FPIPerS = fpi / float64(n)
	}
}

func (r checkpointPressure) finding(run *timeline.Run, s checkpointStretch, trigger float64) diagnose.Finding {
	tick := diagnose.Tick(run)
	warnS := r.warningS(run, s.From)
	timeoutS := r.timeoutS(run, s.From)
	maxWAL := settingAt(run, "max_wal_size", s.From, "1GB")
	cct := r.completion(run, s.From)
	rate := s.rate(tick)
	interval := s.interval(tick)
	f := diagnose.Finding{Severity: diagnose.Warning, Start: math.Max(0, s.From-tick), End: s.To}
	f.Headline = fmt.Sprintf("Checkpoints forced by WAL volume every %s (checkpoint_warning is %s, checkpoint_timeout %s): "+
		"%.0f requested in %s at %s/s of WAL against max_wal_size %s",
		diagnose.SecondsText(interval), diagnose.SecondsText(warnS), diagnose.SecondsText(timeoutS), s.Requested,
		diagnose.SecondsText(s.span(tick)), diagnose.HumanBytes(rate), maxWAL)
	timedShare := s.Timed / (s.Timed + s.Requested)
	f.Evidence = append(f.Evidence,
		diagnose.Evidence{Series: pgmetric.Series(pgmetric.WAL, pgmetric.CheckpointsReq), T: s.To, Value: s.Requested,
			Text: fmt.Sprintf("%.0f checkpoints requested between %.0f s and %.0f s, one every %s; %.0f timed (%s of all: "+
				"fewer than half timed is the too-many-checkpoints-requested alert)", s.Requested, s.From-tick, s.To,
				diagnose.SecondsText(interval), s.Timed, formatPct(timedShare))},
		diagnose.Evidence{Series: pgmetric.Series(pgmetric.WAL, pgmetric.WALBytesPerS), T: s.PeakT, Value: rate,
			Text: fmt.Sprintf("%s of WAL written over the stretch, %s/s on average (peak %s/s around %.0f s, a median of %d samples): a checkpoint is "+
				"requested after every %s (max_wal_size %s ÷ (1 + checkpoint_completion_target %.2g))",
				diagnose.HumanBytes(s.WALBytes), diagnose.HumanBytes(rate), diagnose.HumanBytes(s.PeakRate), s.PeakT, diagnose.PeakWindow, diagnose.HumanBytes(trigger), maxWAL, cct)})
	if s.Buffers > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.WAL, pgmetric.BuffersCheckpoint), T: s.To, Value: s.Buffers,
			Text: fmt.Sprintf("checkpoints wrote %s buffers (%s) to the data files over the stretch",
				formatCount(s.Buffers), diagnose.HumanBytes(s.Buffers*pgBlockBytes))})
	}
	if s.FPIPerS > 0 {
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(pgmetric.WAL, pgmetric.WALFPIPerS), T: s.To, Value: s.FPIPerS,
			Text: fmt.Sprintf("%s full-page images/s on average: the first change to each page after a checkpoint logs the whole 8 kB page",
				formatRate(s.FPIPerS))})
	}
	f.Mechanism = "The checkpointer starts a checkpoint when the WAL written since the last one reaches max_wal_size ÷ (1 + " +
		"checkpoint_completion_target), or when checkpoint_timeout passes. With too small a max_wal_size for the write rate, " +
		"checkpoints come back to back: every dirty buffer is flushed again and again, the I/O is no longer spread over " +
		"checkpoint_timeout, and the first change to each page after every checkpoint writes the whole page to WAL " +
		"(full_page_writes), which makes more WAL and brings the next checkpoint sooner."
	need := rate * timeoutS * (1 + cct)
	least := rate * warnS * (1 + cct)
	f.Remedy = fmt.Sprintf("Raise max_wal_size to %s: the %s/s of WAL measured here × checkpoint_timeout %s × (1 + "+
		"checkpoint_completion_target %.2g), so that checkpoints come from the clock, not from WAL volume — at the very least "+
		"%s, which keeps them checkpoint_warning (%s) apart. `ALTER SYSTEM SET max_wal_size = '%s'; SELECT pg_reload_conf();` "+
		"takes effect without a restart; pg_wal needs that much disk at peak. If the WAL rate itself is the surprise, "+
		"`wal_compression = on` shrinks the full-page images, and bulk loads write less WAL with COPY into a table created or "+
		"truncated in the same transaction.",
		pgSize(need), diagnose.HumanBytes(rate), diagnose.SecondsText(timeoutS), cct, pgSize(least), diagnose.SecondsText(warnS), pgSize(need))
	f.References = []string{
		"https://www.postgresql.org/docs/current/wal-configuration.html",
		"https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-CHECKPOINT-WARNING",
		"https://www.postgresql.org/docs/current/runtime-config-wal.html#GUC-MAX-WAL-SIZE",
		"https://samber.github.io/awesome-prometheus-alerts/rules#postgresql",
	}
	return f
}
