package capacity

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Report is what a capacity search prints and draws: the search's
// result, the objectives, the fit, and where the steps ran.
type Report struct {
	Scenario string `json:"scenario"`
	Workload string `json:"workload"`
	Result   *Result
	SLOs     []SLO
	// USL is the fit of the steps; nil with fewer than three distinct
	// concurrencies, FitErr saying why.
	USL    *USL
	FitErr string
	// Server says where the steps ran: "a fresh embedded PostgreSQL
	// per step", "the given server 127.0.0.1:5432".
	Server string
	Dir    string // the capacity directory holding the steps' runs
}

// Fit fits the USL to the result's steps, filling USL or FitErr.
func (r *Report) Fit() {
	u, err := FitUSL(r.Result.Points())
	if err != nil {
		r.USL, r.FitErr = nil, err.Error()
		return
	}
	r.USL = &u
}

// WriteTable writes the steps, one line each: level, achieved rate,
// latency percentiles, failures, the verdict and the step's top finding.
func WriteTable(w io.Writer, res *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	level := "rate"
	if res.Vary == VaryClients {
		level = "clients"
	}
	fmt.Fprintf(tw, "step\t%s\tachieved\tp50\tp99\tp99.9\tfailed\tresult\ttop finding\n", level)
	for _, s := range res.Steps {
		m := s.Measure
		verdict := "pass"
		switch {
		case s.Err == interrupted:
			verdict = "interrupted"
		case !s.Pass:
			verdict = "FAIL"
		}
		if s.Confirm > 0 {
			verdict += fmt.Sprintf(" (confirm %d)", s.Confirm)
		}
		top := "—"
		if len(s.Binds) > 0 {
			top = s.Binds[0].Rule
		}
		lv := Level(res.Vary, s.Level)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.N, lv, Rate(m.Achieved), ms(float64(m.P50)), ms(float64(m.P99)), ms(float64(m.P999)), pct(m.FailedRatio()), verdict, top)
	}
	return tw.Flush()
}

// WriteSummary writes the lines that answer the question: what is
// sustainable, where the knee and the model's peak are, and what binds.
func (r *Report) WriteSummary(w io.Writer) error {
	res := r.Result
	var b strings.Builder
	best := res.BestStep()
	objectives := r.objectives()
	switch {
	case best == nil:
		fmt.Fprintf(&b, "sustainable: none — %s (%s)\n", res.Stopped, objectives)
	default:
		at := strings.Join(best.Met, ", ")
		if at == "" {
			at = "p99 " + ms(float64(best.Measure.P99))
		}
		lead := Rate(res.Sustainable)
		if res.Vary == VaryClients {
			lead = Level(res.Vary, res.Best) + ", " + lead
		}
		conf := fmt.Sprintf("%d confirming %s within %s", res.Confirmed, plural(res.Confirmed, "run", "runs"), roundPct(res.Spread))
		if res.Confirmed == 0 {
			conf = "not confirmed (" + res.Stopped + ")"
		}
		fmt.Fprintf(&b, "sustainable: %s at %s (%s), %s\n", lead, at, objectives, conf)
	}
	var knee []string
	if k := res.Knee(); k > 0 {
		knee = append(knee, "knee: ~"+Rate(k))
	}
	switch {
	case r.USL != nil:
		u := *r.USL
		fit := fmt.Sprintf("USL fit σ=%.3g κ=%.2g (R² %.2f)", u.Sigma, u.Kappa, u.R2)
		if u.R2 < poorFit {
			fit += ": a poor fit, no peak predicted"
		} else if n, x, ok := u.Peak(); ok {
			fit += fmt.Sprintf(": peak %s at %s", Rate(x), concurrency(res.Vary, n))
		} else {
			fit += fmt.Sprintf(": no peak within 2× the measured range (up to %s)", concurrency(res.Vary, 2*u.MaxN))
		}
		knee = append(knee, fit)
	case r.FitErr != "":
		knee = append(knee, "USL: no fit ("+r.FitErr+")")
	}
	if len(knee) > 0 {
		fmt.Fprintln(&b, strings.Join(knee, "; "))
	}
	for _, line := range r.bindLines() {
		fmt.Fprintln(&b, line)
	}
	if r.Server != "" {
		fmt.Fprintf(&b, "server: %s\n", r.Server)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// poorFit is the R² below which the fit's peak is not worth printing.
const poorFit = 0.5

// objectives is the SLOs as written, joined: "SLO p99<50ms, failed<0.1%".
func (r *Report) objectives() string {
	if len(r.SLOs) == 0 {
		return "no SLO: the generator keeping up"
	}
	texts := make([]string, len(r.SLOs))
	for i, o := range r.SLOs {
		texts[i] = o.Text
	}
	return "SLO " + strings.Join(texts, ", ")
}

// bindLines says what binds at the first failing step and at the last
// passing one: the top finding with its remedy, or firedrill itself,
// and the neutral saturation signals.
func (r *Report) bindLines() []string {
	var lines []string
	fail, pass := r.Result.BindStep(), r.Result.BestStep()
	if fail != nil {
		if len(fail.Binds) > 0 {
			which := "the first failing level"
			if fail.Level != r.Result.Failed {
				which = "the lowest failing level with a finding"
			}
			lines = append(lines, "binds: "+bindText(fail.Binds[0])+" (at "+Level(r.Result.Vary, fail.Level)+", "+which+")")
		} else {
			lines = append(lines, "binds: no finding at the first failing step ("+Level(r.Result.Vary, fail.Level)+": "+strings.Join(fail.Why, "; ")+")")
		}
		lines = append(lines, "  signals at "+Level(r.Result.Vary, fail.Level)+": "+Signals(fail.Measure))
		for _, l := range fail.Measure.Services {
			lines = append(lines, "  "+l.Text()+" (at "+Level(r.Result.Vary, fail.Level)+")")
		}
	}
	if pass != nil && len(pass.Binds) > 0 && (fail == nil || len(fail.Binds) == 0 || pass.Binds[0].Rule != fail.Binds[0].Rule) {
		lines = append(lines, "  at "+Level(r.Result.Vary, pass.Level)+" (the last passing step) already: "+bindText(pass.Binds[0]))
	}
	if pass != nil {
		for _, l := range pass.Measure.Services {
			lines = append(lines, "  "+l.Text()+" (at "+Level(r.Result.Vary, pass.Level)+", the last passing step)")
		}
	}
	return lines
}

// bindText is one Bind in a line: the rule, its headline, its remedy.
func bindText(b Bind) string {
	s := b.Rule + ": " + b.Headline
	if b.Remedy != "" {
		s += " — fix: " + firstSentence(b.Remedy)
	}
	return s
}

// Signals are a step's neutral saturation signals in words: the host's
// CPU, firedrill's own, the pool's wait, how much of the offered rate
// was issued.
func Signals(m Measure) string {
	var parts []string
	if m.HostBusy >= 0 {
		parts = append(parts, fmt.Sprintf("host CPU %.0f %% busy", m.HostBusy))
	}
	if m.ServerCPU >= 0 && m.ServerCPUCap > 0 {
		parts = append(parts, fmt.Sprintf("server CPU %.2f of %s", m.ServerCPU, cores(m.ServerCPUCap)))
	} else if m.ServerCPUUnknown != "" {
		parts = append(parts, m.ServerCPUUnknown)
	}
	if m.ClientCPUCap > 0 {
		parts = append(parts, fmt.Sprintf("firedrill %.1f of %.0f cores", m.ClientCPU, m.ClientCPUCap))
	}
	if m.ClientSchedP99 > 0 {
		parts = append(parts, fmt.Sprintf("firedrill's goroutines waited %.1f ms (p99) for a thread", m.ClientSchedP99))
	}
	if m.PoolWaitP99 > 0 {
		parts = append(parts, "pool wait p99 "+ms(float64(m.PoolWaitP99)))
	}
	if m.Offered > 0 {
		parts = append(parts, fmt.Sprintf("issued %.1f %% of the offered rate", 100*m.KeptUp()))
	}
	if len(parts) == 0 {
		return "none sampled"
	}
	return strings.Join(parts, ", ")
}

// firstSentence cuts a remedy to its first sentence, for one line.
func firstSentence(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if i := strings.Index(s, ". "); i > 0 && i < 200 {
		return s[:i+1]
	}
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// concurrency names a USL concurrency: clients on the closed model,
// transactions in flight on the open one.
func concurrency(vary string, n float64) string {
	if vary == VaryClients {
		return fmt.Sprintf("%.0f clients", math.Round(n))
	}
	return fmt.Sprintf("%.3g in flight", n)
}

// roundPct formats a spread as a whole percentage ("3 %"), finer below 1.
func roundPct(r float64) string {
	if r < 0.01 {
		return fmt.Sprintf("%.1f %%", 100*r)
	}
	return fmt.Sprintf("%.0f %%", math.Ceil(100*r))
}

// plural picks the word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
