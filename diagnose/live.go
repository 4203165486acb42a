package diagnose

// Live findings: while a run goes on, the rules see only what was recorded
// so far, and a severity they give early may not survive the whole run (a
// second of lock waits during warm-up, a burst of query-cache waits). An
// on-call engineer acts on what the live stream prints, so the stream
// prints a WARNING or CRITICAL only once it is stable: the finding held
// that severity in every pass over a confirmation window, or its evidence
// cannot shrink (Finding.Lasting: deadlocks and refused connections that
// happened stay happened).

// DefaultConfirmS is the confirmation window of the live stream: two
// passes of its 10 s cadence. Replaying every recording under testdata
// second by second (kinds' TestLiveEqualsFinal), the longest
// warning later withdrawn held 5 s.
const DefaultConfirmS = 10

// Confirmation holds back a live finding's severity until it is stable;
// feed it each pass of the rules in time order. The zero value confirms
// with DefaultConfirmS.
type Confirmation struct {
	// WindowS is how long, in seconds of the run, a finding must hold a
	// severity in every pass before it is shown at it.
	WindowS float64
	// since is, per finding (LiveKey) and severity rank, the time of the
	// first pass of the unbroken run of passes at that severity or worse.
	since map[string]map[int]float64
}

// Confirm takes the rules' findings of a pass at t seconds into the run
// and returns them with each severity lowered to the one it has held for
// the window (INFO when none has), or kept as it is when Lasting.
func (c *Confirmation) Confirm(t float64, fs []Finding) []Finding {
	window := c.WindowS
	if window == 0 {
		window = DefaultConfirmS
	}
	if c.since == nil {
		c.since = map[string]map[int]float64{}
	}
	seen := map[string]bool{}
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		key := LiveKey(f)
		seen[key] = true
		held := c.since[key]
		if held == nil {
			held = map[int]float64{}
			c.since[key] = held
		}
		rank := SeverityRank(f.Severity)
		confirmed := Info
		for _, level := range []string{Warning, Critical} {
			lr := SeverityRank(level)
			if rank > lr {
				delete(held, lr)
				continue
			}
			if _, ok := held[lr]; !ok {
				held[lr] = t
			}
			if t-held[lr] >= window || f.Lasting {
				confirmed = level
			}
		}
		if rank < SeverityRank(confirmed) {
			f.Severity = confirmed
		}
		out = append(out, f)
	}
	for key := range c.since {
		if !seen[key] {
			delete(c.since, key)
		}
	}
	return out
}

// LiveKey identifies a finding across the passes of one run: its rule,
// target (in a run of several) and workload.
func LiveKey(f Finding) string { return f.Rule + "\x00" + f.Target + "\x00" + f.Workload }

// FinalOf is the finding of final that judges live, a finding shown
// during the run: the one of the same rule, target and workload, or, when
// either names no workload (a rule that learns the workload only from
// evidence read at the end), the most severe of the same rule and target.
func FinalOf(live Finding, final []Finding) (Finding, bool) {
	var best Finding
	found := false
	for _, f := range final {
		if f.Rule != live.Rule || f.Target != live.Target {
			continue
		}
		if f.Workload == live.Workload {
			return f, true
		}
		if (f.Workload == "" || live.Workload == "") && (!found || SeverityRank(f.Severity) < SeverityRank(best.Severity)) {
			best, found = f, true
		}
	}
	return best, found
}

// Withdrawn reports whether the final report takes back a severity shown
// live: it has no such finding, or one less severe that it does not say
// resolved (an incident that ended before the run did is kept, at INFO,
// as resolved; the live stream said so when it ended).
func Withdrawn(live Finding, final []Finding) bool {
	f, ok := FinalOf(live, final)
	if !ok {
		return true
	}
	return SeverityRank(f.Severity) > SeverityRank(live.Severity) && f.Resolved == 0
}
