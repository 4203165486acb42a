package report

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/firedrill/firedrill/report/internal/htmlpage"
	"github.com/firedrill/firedrill/timeline"
)

// CompareSide names one run of a compare page: its label (the run's name,
// Comparison.A.Name), its directory as given, and a link to its
// report.html ("" for none).
type CompareSide = htmlpage.Side

// WriteCompareHTML writes a self-contained page with the comparison's
// verdict tables (coloured by verdict; script diffs per file, folded)
// over both runs' timelines overlaid (throughput and latency per
// workload, database load: the kinds' present.Load, from the comparison's
// options), the runs named by their sides' labels.
func WriteCompareHTML(w io.Writer, a, b *timeline.Run, sa, sb CompareSide, c *Comparison) error {
	assets, err := fs.Sub(htmlAssets, "assets")
	if err != nil {
		return err
	}
	var text bytes.Buffer
	if err := WriteCompare(&text, c); err != nil {
		return err
	}
	return htmlpage.RenderCompare(w, assets, a, b, sa, sb, compareVerdict(c, text.String()), c.Options.Kinds)
}

// verdictClass is the page's class of an outcome.
func verdictClass(outcome string) string {
	switch outcome {
	case OutcomeFaster:
		return "better"
	case OutcomeSlower:
		return "worse"
	case OutcomeUnstable, OutcomeNoise, OutcomeDiffers:
		return "unsure"
	}
	return "same"
}

// compareVerdict lays the comparison out for the page.
func compareVerdict(c *Comparison, text string) htmlpage.Verdict {
	v := htmlpage.Verdict{
		Method: fmt.Sprintf("Medians of block values with %.0f %% confidence intervals; Mann–Whitney U test, α = %g. A metric whose blocks vary by more than %.0f %% of their mean (CV) and whose change cannot be bounded is unstable: its direction is tested, its size is not given.",
			100*c.Options.Confidence, c.Options.Alpha, 100*UnstableCV),
		Notes: c.Notes, Text: text,
	}
	for _, wc := range c.Workloads {
		vw := htmlpage.VerdictWorkload{Name: wc.Name, Changes: wc.Changes, Notes: wc.Notes}
		if wc.BlocksA > 0 {
			vw.Blocks = fmt.Sprintf("%d + %d blocks of %g s after a %.0f s / %.0f s warm-up (lag-1 autocorrelation %.2f)",
				wc.BlocksA, wc.BlocksB, wc.Block, wc.WarmupA, wc.WarmupB, wc.Autocorrelation)
		}
		for _, m := range wc.Metrics {
			vw.Rows = append(vw.Rows, htmlpage.VerdictRow{
				Metric: m.Metric, A: EstimateText(m.A, m.Unit, m.CVA), B: EstimateText(m.B, m.Unit, m.CVB),
				Change: ChangeText(m), Verdict: VerdictText(m), Sentence: m.Verdict, Class: verdictClass(m.Outcome),
			})
		}
		if st := wc.Stalls; st != nil {
			vw.Stalls = fmt.Sprintf("slowest transaction: %s ms in A, %s ms in B; intervals with one over %g ms: %d of %d in A, %d of %d in B",
				formatNumber(st.MaxA), formatNumber(st.MaxB), st.ThresholdMS, st.IntervalsA, st.TotalA, st.IntervalsB, st.TotalB)
		}
		for _, sd := range wc.Scripts {
			vs := htmlpage.VerdictScript{Title: sd.Title(), Summary: fmt.Sprintf("%d command(s) removed, %d added", len(sd.Removed), len(sd.Added))}
			for _, r := range sd.Removed {
				vs.Lines = append(vs.Lines, htmlpage.VerdictLine{Sign: "−", Text: r})
			}
			for _, a := range sd.Added {
				vs.Lines = append(vs.Lines, htmlpage.VerdictLine{Sign: "+", Text: a})
			}
			vw.Scripts = append(vw.Scripts, vs)
		}
		v.Workloads = append(v.Workloads, vw)
	}
	for _, n := range c.OnlyInA {
		v.OnlyIn = append(v.OnlyIn, fmt.Sprintf("workload %s ran only in %s", n, c.A.Name))
	}
	for _, n := range c.OnlyInB {
		v.OnlyIn = append(v.OnlyIn, fmt.Sprintf("workload %s ran only in %s", n, c.B.Name))
	}
	for _, cc := range c.Counters {
		if zeroOrAbsent(cc.A) && zeroOrAbsent(cc.B) {
			continue
		}
		v.Counters = append(v.Counters, htmlpage.VerdictPair{Name: cc.Label, A: formatCounter(cc.A, cc.Unit), B: formatCounter(cc.B, cc.Unit)})
	}
	for _, f := range c.Findings {
		vf := htmlpage.VerdictFinding{Rule: f.Rule, Headline: f.Headline, Class: "same"}
		switch f.Change {
		case FindingAppeared:
			vf.Change, vf.Class, vf.Severity, vf.Counts = "appeared in "+c.B.Name, "worse", f.SeverityB, fmt.Sprintf("×%d", f.CountB)
		case FindingVanished:
			vf.Change, vf.Class, vf.Severity, vf.Counts = "vanished in "+c.B.Name, "better", f.SeverityA, fmt.Sprintf("×%d", f.CountA)
		default:
			vf.Change, vf.Counts = "in both", fmt.Sprintf("×%d → ×%d", f.CountA, f.CountB)
			vf.Severity = f.SeverityB
			if f.SeverityA != f.SeverityB {
				vf.Severity = f.SeverityA + " → " + f.SeverityB
			}
		}
		vf.Severity = strings.ToUpper(vf.Severity)
		v.Findings = append(v.Findings, vf)
	}
	for _, s := range c.Settings {
		v.Settings = append(v.Settings, htmlpage.VerdictPair{Name: s.Name, A: orNone(s.A), B: orNone(s.B)})
	}
	return v
}
