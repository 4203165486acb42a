package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/report/eventwords"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// Progress formats live progress lines while a run goes on: one line per
// workload per progress interval, with what each database is waiting on.
type Progress struct {
	W     io.Writer
	Every float64 // seconds between lines; 0 = every tick
	// Total is the run's planned duration in seconds: each line starts
	// with the elapsed time against it, "[12s/60s]"; 0 prints the
	// elapsed time alone, "12.0 s".
	Total float64
	// Kinds say where each kind's samples hold their waits (present.Waits);
	// the zero value prints no wait line.
	Kinds present.Kinds
	// Targets name each workload's target in a run of several (the
	// scenario's, as Manifest.Workloads will hold them): its lines then
	// read "<target>/<workload>". Nil in a run of one system.
	Targets map[string]string
	last    float64
	acc     map[string]*progressAcc
	order   []string
}

type progressAcc struct {
	count, failed int64
	span          float64
	p50, p99, max int64
	oldest        int64 // µs: the oldest transaction still running at the last interval's end
	clients       int
	unconnected   int // clients waiting to retry a connection, at the last interval's end
	poolP99       int64
}

// Tick takes a tick's intervals and samples; it prints when a progress
// interval is complete.
func (p *Progress) Tick(t float64, ivs []timeline.Interval, samples []timeline.Sample) {
	if p.acc == nil {
		p.acc = map[string]*progressAcc{}
	}
	for _, iv := range ivs {
		a := p.acc[iv.Workload]
		if a == nil {
			a = &progressAcc{}
			p.acc[iv.Workload] = a
			p.order = append(p.order, iv.Workload)
		}
		a.count += iv.Count
		a.failed += iv.Failed
		a.span += iv.End - iv.Start
		// The worst interval's percentiles stand for the progress span.
		a.p50 = max(a.p50, iv.LatencyPct.P50)
		a.p99 = max(a.p99, iv.LatencyPct.P99)
		a.max = max(a.max, iv.LatencyPct.Max)
		a.oldest = iv.OldestUS
		a.clients = iv.Clients
		a.unconnected = iv.Unconnected
		a.poolP99 = max(a.poolP99, iv.PoolWaitPct.P99)
	}
	if p.Every > 0 && t-p.last < p.Every-0.05 { // ticks land a little late
		return
	}
	p.last = t
	for _, name := range p.order {
		a := p.acc[name]
		tps := 0.0
		if a.span > 0 {
			tps = float64(a.count) / a.span
		}
		// A workload that finished nothing has no latency to show: a
		// dash, not "0.00 ms", and the age of what it is stuck on.
		p50, p99, mx := "–", "–", "–"
		if a.count > 0 {
			p50, p99, mx = ms(a.p50), ms(a.p99), ms(a.max)
		}
		who := name
		if target := p.Targets[name]; target != "" {
			who = target + "/" + name
		}
		line := fmt.Sprintf("%s  %-12s %9.1f tps  p50 %s  p99 %s  max %s  failed %d  clients %d",
			p.clock(t), who, tps, p50, p99, mx, a.failed, a.clients)
		if a.unconnected > 0 {
			line += fmt.Sprintf(" (%d without a connection)", a.unconnected)
		}
		if a.poolP99 > 0 {
			line += "  pool wait p99 " + ms(a.poolP99)
		}
		if a.oldest > 0 && a.oldest >= a.max {
			// Shown once something has run longer than anything that
			// finished: a stall in progress.
			line += "  oldest running " + ms(a.oldest)
		}
		fmt.Fprintln(p.W, line)
		*a = progressAcc{}
	}
	for _, w := range p.Kinds.Waits() {
		for _, s := range samples {
			if s.Source != w.Source {
				continue
			}
			if wait, aas := topWait(w, s); wait != "" {
				who := "database" // a run of one system's
				if s.Target != "" {
					who = s.Target
				}
				fmt.Fprintf(p.W, "%s  %-12s %9.1f active sessions, top wait %s\n", p.clock(t), who, aas, wait)
			}
		}
	}
}

// clock is a progress line's time: t against the planned duration,
// "[12s/60s]", padded to the width of the last line's so the columns
// stay put; without one, "   12.0 s".
func (p *Progress) clock(t float64) string {
	if p.Total <= 0 {
		return fmt.Sprintf("%7.1f s", t)
	}
	total := fmt.Sprintf("%.0fs", p.Total)
	return fmt.Sprintf("%*s", len(total)*2+3, fmt.Sprintf("[%.0fs/%s]", t, total))
}

// topWait finds the wait with the most active sessions in a sample of a
// kind's waits, and all active sessions.
func topWait(w present.Waits, s timeline.Sample) (string, float64) {
	best, bestV := "", 0.0
	for k, v := range s.Values {
		if name, ok := strings.CutPrefix(k, w.Prefix); ok && (v > bestV || v == bestV && best != "" && name < best) {
			best, bestV = name, v
		}
	}
	if best == "" {
		return "", 0
	}
	return fmt.Sprintf("%s (%.0f)", best, bestV), s.Values[w.Total]
}

func ms(us int64) string { return present.MillisText(float64(us)) }

// WriteSummary prints a run's summary for a terminal: how it ended, each
// workload's totals and latency, errors, events, and the findings, most
// severe first.
func WriteSummary(w io.Writer, run *timeline.Run, findings []diagnose.Finding) error {
	m := &run.Manifest
	if len(m.Targets) == 0 {
		fmt.Fprintf(w, "run %s: %s (%s), %s\n", m.Name, m.Status, run.Dir, serverLine(m.Target))
	} else {
		fmt.Fprintf(w, "run %s: %s (%s), %d targets\n", m.Name, m.Status, run.Dir, len(m.Targets))
		for _, nt := range m.Targets {
			fmt.Fprintf(w, "  %s: %s\n", nt.Name, serverLine(nt.Target))
		}
	}
	if m.Error != "" {
		fmt.Fprintf(w, "  %s\n", m.Error)
	}
	if run.Summary == nil {
		fmt.Fprintln(w, "no summary: the run did not finish; the timeline holds what was measured")
	} else {
		fmt.Fprintf(w, "duration %.1f s\n\n", run.Summary.Duration)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		several := len(m.Targets) > 0
		if several {
			fmt.Fprint(tw, "target\t")
		}
		fmt.Fprintln(tw, "workload\ttx\ttps\tfailed\tp50\tp90\tp99\tp99.9\tmax\tpool wait p99\t")
		for _, ws := range run.Summary.Workloads {
			if several {
				fmt.Fprintf(tw, "%s\t", workloadTarget(m, ws.Name))
			}
			pool := "-"
			if ws.PoolWait != nil {
				pool = ms(ws.PoolPct.P99)
			}
			p := ws.LatencyPct
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", ws.Name, ws.Count, ws.TPS, ws.Failed,
				ms(p.P50), ms(p.P90), ms(p.P99), ms(p.P999), ms(p.Max), pool)
		}
		tw.Flush()
		writeBreakdowns(w, run)
		for _, ws := range run.Summary.Workloads {
			for _, e := range ws.Errors {
				fmt.Fprintf(w, "  %s: %d × %s %s (first at %.1f s)\n", ws.Name, e.Count, e.Code, firstLine(e.Message), e.First)
			}
			if ws.RefusedClients > 0 {
				fmt.Fprintf(w, "  %s: %d clients could not open a connection at least once; they retried with backoff (%.1f s waited in all)\n",
					ws.Name, ws.RefusedClients, ws.ReconnectWait)
			}
		}
	}
	writeOutages(w, run)
	if hasEventMarks(run.Marks) {
		fmt.Fprintln(w, "\nevents:")
		for _, mk := range run.Marks {
			if mk.Kind == timeline.MarkOutage {
				continue // listed under outages
			}
			text := mk.Outcome
			if mk.Error != "" {
				text = "error: " + mk.Error
			}
			if mk.Phase == timeline.PhaseStart {
				text = "started"
				if len(mk.Detail) > 0 {
					text += ": " + eventwords.Detail(mk.Detail)
				}
			}
			event := mk.Event
			if mk.Target != "" {
				event = mk.Target + "/" + event
			}
			fmt.Fprintf(w, "  %7.1f s  %-16s %-5s %s\n", mk.T, event, mk.Phase, text)
		}
	}
	for _, s := range m.Samplers {
		if s.Notes != "" {
			fmt.Fprintf(w, "note: sampler %s: %s\n", s.Name, s.Notes)
		}
	}
	for _, nt := range m.Targets {
		for _, s := range nt.Samplers {
			if s.Notes != "" {
				fmt.Fprintf(w, "note: %s's sampler %s: %s\n", nt.Name, s.Name, s.Notes)
			}
		}
	}
	if findings != nil {
		writeFindings(w, findings)
	}
	return nil
}

// writeBreakdowns prints the targets' breakdowns of their workloads
// (an HTTP service's endpoints), a table each, under the workloads'.
func writeBreakdowns(w io.Writer, run *timeline.Run) {
	for _, b := range run.Breakdowns() {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "workload\t%s\t%s\t\n", b.What, strings.Join(b.Columns, "\t"))
		for _, row := range b.Rows {
			name := row.Workload
			if b.Target != "" {
				name = b.Target + "/" + name
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, row.Name, strings.Join(row.Cells, "\t"))
		}
		tw.Flush()
	}
}

// serverLine names a target's server for people: product, version and
// where it ran.
func serverLine(t timeline.Target) string {
	where := t.Address
	if t.Embedded {
		where = "embedded, " + where
	}
	return fmt.Sprintf("%s %s (%s)", t.ProductName(), t.ServerVersion, where)
}

func hasEventMarks(marks []timeline.Mark) bool {
	for _, mk := range marks {
		if mk.Kind != timeline.MarkOutage {
			return true
		}
	}
	return false
}

// writeOutages lists the outages: cause and duration.
func writeOutages(w io.Writer, run *timeline.Run) {
	outages := run.Outages()
	if len(outages) == 0 {
		return
	}
	fmt.Fprintln(w, "\noutages (connections failing, no transaction succeeding):")
	for _, o := range outages {
		outcome := o.Outcome
		if !o.Ended {
			outcome = "not recovered by the end of the run"
		}
		fmt.Fprintf(w, "  %7.1f s  %s: %.1f s, %s: %s; %s\n", o.Start, o.Workload, o.Duration(), o.Code, o.Cause, outcome)
	}
}

// workloadTarget is the name of the target a workload of a run of
// several loads.
func workloadTarget(m *timeline.Manifest, workload string) string {
	for _, wi := range m.Workloads {
		if wi.Name == workload {
			return wi.Target
		}
	}
	return ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func writeFindings(w io.Writer, findings []diagnose.Finding) {
	if len(findings) == 0 {
		fmt.Fprintln(w, "\nfindings: none")
		return
	}
	fs := append([]diagnose.Finding(nil), findings...)
	diagnose.Sort(fs)
	fmt.Fprintf(w, "\nfindings (%d):\n", len(fs))
	for _, f := range fs {
		WriteFinding(w, f)
	}
}

// WriteFinding prints one finding: headline, window, evidence, mechanism
// and remedy; in a run of several targets the headline starts with the
// target's name.
func WriteFinding(w io.Writer, f diagnose.Finding) {
	about := ""
	if f.Target != "" {
		about = f.Target + ": "
	}
	fmt.Fprintf(w, "\n[%s] %s%s  (%s, %.0f–%.0f s)\n", strings.ToUpper(f.Severity), about, f.Headline, f.Rule, f.Start, f.End)
	for _, e := range f.Evidence {
		at := ""
		if e.T > 0 {
			at = fmt.Sprintf("at %.0f s: ", e.T)
		}
		fmt.Fprintf(w, "    - %s%s  [%s]\n", at, e.Text, e.Series)
	}
	if f.Mechanism != "" {
		fmt.Fprintf(w, "  why: %s\n", f.Mechanism)
	}
	if f.Remedy != "" {
		fmt.Fprintf(w, "  fix: %s\n", f.Remedy)
	}
}

// SortFindings orders findings most severe first, then by time.
func SortFindings(fs []diagnose.Finding) { diagnose.Sort(fs) }
