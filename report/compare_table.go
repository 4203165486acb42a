package report

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/firedrill/firedrill/timeline"
)

// UnstableCV is the coefficient of variation of a run's block values
// above which a metric may be called unstable: when, besides, the
// change's interval is over UnstableWidth wide, no size of change can be
// given (a p99 swung by a few second-long deadlock waits gave "± 12117 %").
const UnstableCV = 0.5

// UnstableWidth is the width of a change's interval (ChangeHi −
// ChangeLo, 1 = 100 percentage points) from which a metric whose blocks
// vary more than UnstableCV is called unstable.
const UnstableWidth = 1.0

// Outcomes of a metric's comparison (MetricComparison.Outcome), B
// against A.
const (
	OutcomeFaster   = "faster"
	OutcomeSlower   = "slower"
	OutcomeSame     = "no significant difference"
	OutcomeNoise    = "within noise"
	OutcomeUnstable = "unstable"
	OutcomeTooFew   = "too few blocks"
	OutcomeUnknown  = "not measured"
	OutcomeDiffers  = "differs"
)

// runNames names the two runs for tables and legends: the directories'
// names, else the scenarios', else "A" and "B".
func runNames(a, b *timeline.Run) (string, string) {
	da, db := filepath.Base(filepath.Clean(a.Dir)), filepath.Base(filepath.Clean(b.Dir))
	if a.Dir != "" && b.Dir != "" && da != db && da != "." && db != "." {
		return da, db
	}
	if sa, sb := a.Manifest.Name, b.Manifest.Name; sa != "" && sb != "" && sa != sb {
		return sa, sb
	}
	return "A", "B"
}

// coefficientOfVariation is the standard deviation of values over their
// mean (0 for fewer than two values or a mean of 0).
func coefficientOfVariation(values []float64) float64 {
	if len(values) < 2 {
		return 0
	}
	mean := 0.0
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	if mean == 0 {
		return 0
	}
	ss := 0.0
	for _, v := range values {
		ss += (v - mean) * (v - mean)
	}
	return math.Sqrt(ss/float64(len(values)-1)) / math.Abs(mean)
}

// judgeUnstable records the runs' coefficients of variation and, when one
// exceeds UnstableCV, words the verdict without a size: the U test ranks
// the blocks and still tells a direction, but an interval of ±10,000 %
// tells nothing. It reports whether the metric is unstable.
func judgeUnstable(mc *MetricComparison, m compareMetric, valuesA, valuesB []float64) bool {
	mc.CVA, mc.CVB = coefficientOfVariation(valuesA), coefficientOfVariation(valuesB)
	if len(valuesA) == 0 || len(valuesB) == 0 || max(mc.CVA, mc.CVB) <= UnstableCV {
		return false
	}
	if width := mc.ChangeHi - mc.ChangeLo; !math.IsNaN(mc.Change) && !math.IsInf(width, 0) && width <= UnstableWidth {
		return false // the blocks vary, but the change is bounded all the same
	}
	mc.Unstable = true
	cv := unstableText(*mc)
	if mc.Significant && !math.IsNaN(mc.Change) && mc.Change != 0 {
		word := "slower"
		if (mc.Change > 0) == m.higherIsBetter {
			word = "faster"
		}
		mc.Verdict = fmt.Sprintf("B is %s, %s, by an amount the blocks cannot bound: %s", word, formatP(mc.P), cv)
		return true
	}
	mc.Significant = false
	mc.Verdict = fmt.Sprintf("%s: no significant difference, %s", cv, formatP(mc.P))
	return true
}

// unstableText is "unstable (CV 213 % in A)" or "(CV 150 % in A, 213 % in B)".
func unstableText(mc MetricComparison) string {
	if mc.CVA <= UnstableCV && mc.CVB <= UnstableCV {
		return "unstable"
	}
	switch {
	case mc.CVA > UnstableCV && mc.CVB > UnstableCV:
		return fmt.Sprintf("unstable (CV %s %% in A, %s %% in B)", formatPercent(mc.CVA), formatPercent(mc.CVB))
	case mc.CVA > UnstableCV:
		return fmt.Sprintf("unstable (CV %s %% in A)", formatPercent(mc.CVA))
	}
	return fmt.Sprintf("unstable (CV %s %% in B)", formatPercent(mc.CVB))
}

// outcomeOf is the comparison's verdict in a word or two.
func outcomeOf(mc MetricComparison, m compareMetric) string {
	switch {
	case strings.HasPrefix(mc.Verdict, "not measured"):
		return OutcomeUnknown
	case mc.Significant && (math.IsNaN(mc.Change) || mc.Change == 0):
		return OutcomeDiffers
	case mc.Significant && (mc.Change > 0) == m.higherIsBetter:
		return OutcomeFaster
	case mc.Significant:
		return OutcomeSlower
	case mc.Unstable:
		return OutcomeUnstable
	case mc.WithinNoise:
		return OutcomeNoise
	case strings.HasPrefix(mc.Verdict, "too few"):
		return OutcomeTooFew
	}
	return OutcomeSame
}

// ChangeText writes a metric's change with its interval: "−12 % (−20 %
// to −4 %)", "×20.6 (×10.6 to ×30.6)" from twice as much up, "÷15900
// (÷21000 to ÷9800)" from half as much down, or "unstable (CV …)" when the
// blocks cannot bound it.
func ChangeText(mc MetricComparison) string {
	switch {
	case mc.Unstable:
		return unstableText(mc)
	case math.IsNaN(mc.Change):
		return "-"
	case mc.Change == 0 && mc.ChangeLo == 0 && mc.ChangeHi == 0:
		return "0 %"
	case mc.Change >= 1:
		hi := "?"
		if !math.IsInf(mc.ChangeHi, 0) {
			hi = "×" + formatRatio(1+mc.ChangeHi)
		}
		return fmt.Sprintf("×%s (×%s to %s)", formatRatio(1+mc.Change), formatRatio(1+mc.ChangeLo), hi)
	case mc.Change <= -0.5:
		// Half or less: "÷15900" says what "−100 %" rounds away.
		div := func(change float64) string {
			if 1+change <= 0 || math.IsInf(change, 0) {
				return "?"
			}
			return "÷" + formatRatio(1/(1+change))
		}
		return fmt.Sprintf("%s (%s to %s)", div(mc.Change), div(mc.ChangeLo), div(mc.ChangeHi))
	case math.IsInf(mc.ChangePM, 0):
		return signedPercent(mc.Change) + " (± ?)"
	}
	return fmt.Sprintf("%s (%s)", signedPercent(mc.Change), changeRange(mc))
}

func signedPercent(v float64) string {
	switch {
	case v < 0:
		return "−" + formatPercent(-v) + " %"
	case v == 0:
		return "0 %"
	}
	return "+" + formatPercent(v) + " %"
}

func formatRatio(r float64) string {
	if r >= 10 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// VerdictText is the table's verdict cell: the outcome and its p-value.
func VerdictText(mc MetricComparison) string {
	switch mc.Outcome {
	case OutcomeUnknown, OutcomeTooFew:
		return mc.Verdict
	case OutcomeNoise:
		// Why it is noise, which the reader cannot guess.
		if _, why, ok := strings.Cut(mc.Verdict, ", but "); ok {
			return fmt.Sprintf("within noise, %s: %s", formatP(mc.P), why)
		}
	}
	return mc.Outcome + ", " + formatP(mc.P)
}

// EstimateText writes one run's median: with its interval ("402 tx/s ±
// 3%"), or with its blocks' coefficient of variation ("113.9 ms, CV 112
// %") when the interval reaches further from the median than the median
// itself — a "± 723%" says only that the blocks disagree.
func EstimateText(e Estimate, unit string, cv float64) string {
	if math.IsInf(e.Lo, 0) && math.IsInf(e.Hi, 0) && e.Center == 0 {
		return "-"
	}
	center := formatNumber(e.Center) + " " + unit
	if unit == "ms" && e.Center >= 1000 {
		center = formatNumber(e.Center/1000) + " s"
	}
	if e.Center > 0 && max(e.Hi-e.Center, e.Center-e.Lo) > e.Center {
		return fmt.Sprintf("%s, CV %s %%", center, formatPercent(cv))
	}
	return fmt.Sprintf("%s ± %s", center, benchmath.Summary{Center: e.Center, Lo: e.Lo, Hi: e.Hi}.PctRangeString())
}

// ScriptDiff is one script file of a workload whose commands differ
// between the runs: the commands only A runs and only B runs (as
// multisets, whitespace folded), in script order.
type ScriptDiff struct {
	// ScriptA and ScriptB are the script's name in each run ("" where the
	// run has no such script); FileA and FileB its file under the runs'
	// scripts/ directory.
	ScriptA string   `json:"script_a,omitempty"`
	ScriptB string   `json:"script_b,omitempty"`
	FileA   string   `json:"file_a,omitempty"`
	FileB   string   `json:"file_b,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Added   []string `json:"added,omitempty"`
}

// Title names the script file or files: "cart.sql", or "cart-random.sql
// → cart-sorted.sql" when B runs another file in its place.
func (d ScriptDiff) Title() string {
	switch {
	case d.ScriptA == "":
		return d.ScriptB + " (only in B)"
	case d.ScriptB == "":
		return d.ScriptA + " (only in A)"
	case d.ScriptA != d.ScriptB:
		return d.ScriptA + " → " + d.ScriptB
	}
	return d.ScriptA
}

// diffScripts pairs the workload's scripts (by name, then the unpaired in
// order) and lists the commands that differ in each pair.
func diffScripts(a, b []timeline.ScriptInfo) []ScriptDiff {
	usedB := make([]bool, len(b))
	pair := make([]int, len(a))
	for i, sa := range a {
		pair[i] = -1
		for j, sb := range b {
			if !usedB[j] && sb.Name == sa.Name {
				pair[i], usedB[j] = j, true
				break
			}
		}
	}
	for i := range a {
		if pair[i] >= 0 {
			continue
		}
		for j := range b {
			if !usedB[j] {
				pair[i], usedB[j] = j, true
				break
			}
		}
	}
	var out []ScriptDiff
	add := func(d ScriptDiff, ca, cb []string) {
		la, lb := foldCommands(ca), foldCommands(cb)
		d.Removed, d.Added = multisetMinus(la, lb), multisetMinus(lb, la)
		if len(d.Removed)+len(d.Added) > 0 {
			out = append(out, d)
		}
	}
	for i, sa := range a {
		d := ScriptDiff{ScriptA: sa.Name, FileA: sa.File}
		var cb []string
		if j := pair[i]; j >= 0 {
			d.ScriptB, d.FileB, cb = b[j].Name, b[j].File, b[j].Commands
		}
		add(d, sa.Commands, cb)
	}
	for j, sb := range b {
		if !usedB[j] {
			add(ScriptDiff{ScriptB: sb.Name, FileB: sb.File}, nil, sb.Commands)
		}
	}
	return out
}

func foldCommands(cs []string) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = strings.Join(strings.Fields(c), " ")
	}
	return out
}

// driftText writes a run's drift between its halves: "16 %", or "×3.1"
// from twice as much ("13189 %" said nothing a reader could use).
func driftText(drift float64) string {
	if drift >= 1 {
		return "×" + formatRatio(1+drift)
	}
	return formatPercent(drift) + " %"
}
