package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/drills"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// drillCompareFile is the compare page between a drill's broken and fixed
// variants, in the drill's run directory.
const drillCompareFile = "compare.html"

// fixLineMax bounds the length of the fix line printed under a variant's
// top finding; the report holds the whole remedy.
const fixLineMax = 200

// topFinding is a variant's most severe finding (the diagnosis sorts
// them so), if it has one at warning or critical.
func topFinding(fs []diagnose.Finding) (diagnose.Finding, bool) {
	sorted := append([]diagnose.Finding(nil), fs...)
	diagnose.Sort(sorted)
	if len(sorted) == 0 || sorted[0].Severity == diagnose.Info {
		return diagnose.Finding{}, false
	}
	return sorted[0], true
}

// fixLine is a remedy's first sentence (a period or semicolon outside
// `code` and parentheses), cut at a word boundary to fixLineMax
// characters.
func fixLine(remedy string) string {
	remedy = strings.Join(strings.Fields(remedy), " ")
	inCode, depth := false, 0
	end := len(remedy)
	for i, r := range remedy {
		switch {
		case r == '`':
			inCode = !inCode
		case inCode:
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == '.' || r == ';') && (i+1 == len(remedy) || remedy[i+1] == ' '):
			end = i + 1
		}
		if end < len(remedy) {
			break
		}
	}
	s := remedy[:end]
	if utf8.RuneCountInString(s) <= fixLineMax {
		return s
	}
	runes := []rune(s)[:fixLineMax]
	cut := string(runes)
	if sp := strings.LastIndexByte(cut, ' '); sp > fixLineMax/2 {
		cut = cut[:sp]
	}
	return strings.TrimRight(cut, " ,;:—-") + " …"
}

// writeVariantReport writes report.html into the variant's run directory
// and returns its path.
func writeVariantReport(run *timeline.Run, findings []diagnose.Finding, kinds present.Kinds) (string, error) {
	if err := report.WriteHTMLFile(run, findings, kinds); err != nil {
		return "", fmt.Errorf("write the report of %s: %w", run.Dir, err)
	}
	return absPath(filepath.Join(run.Dir, timeline.ReportFile)), nil
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// printVariantReports prints, per variant, its report's path and its top
// finding's headline and fix (or that it has none at warning or
// critical), and whether the variant allows that finding.
func printVariantReports(w io.Writer, runs []variantRun, color bool) {
	fmt.Fprintln(w, "\nreports:")
	for _, r := range runs {
		rep := filepath.Join(r.run.Dir, timeline.ReportFile)
		if _, err := os.Stat(rep); err == nil {
			fmt.Fprintf(w, "  %s: %s\n", clikit.Paint(color, clikit.Bold, r.variant.Name), absPath(rep))
		} else {
			fmt.Fprintf(w, "  %s: no report.html yet ('firedrill report %s --write' writes it)\n", clikit.Paint(color, clikit.Bold, r.variant.Name), r.run.Dir)
		}
		f, ok := topFinding(r.findings)
		if !ok {
			fmt.Fprintf(w, "    no warning or critical finding\n")
			continue
		}
		sevColor := clikit.Yellow
		if f.Severity == diagnose.Critical {
			sevColor = clikit.Red
		}
		fmt.Fprintf(w, "    %s %s: %s\n", clikit.Paint(color, sevColor, strings.ToUpper(f.Severity)), f.Rule, f.Headline)
		if f.Remedy != "" {
			fmt.Fprintf(w, "    fix: %s\n", fixLine(f.Remedy))
		}
		if a, ok := r.variant.Expect.Allows(f.Rule); ok {
			fmt.Fprintf(w, "    allowed in %s: %s\n", r.variant.Name, a.Why)
		}
	}
}

// comparePair picks the variants a drill's compare page sets side by
// side: broken against fixed, the drill's two named roles; nil when
// either did not run.
func comparePair(runs []variantRun) (a, b *variantRun) {
	for i := range runs {
		switch runs[i].variant.Name {
		case "broken":
			a = &runs[i]
		case "fixed":
			b = &runs[i]
		}
	}
	if a == nil || b == nil {
		return nil, nil
	}
	return a, b
}

// writeDrillCompare writes compare.html between the broken and fixed
// variants into the drill's directory and returns its path ("" when
// those two did not both run).
func writeDrillCompare(drillDir string, runs []variantRun, kinds present.Kinds) (string, error) {
	a, b := comparePair(runs)
	if a == nil {
		return "", nil
	}
	opts := report.DefaultCompareOptions
	opts.Kinds = kinds
	c := report.CompareWith(a.run, b.run, a.findings, b.findings, opts)
	side := func(r *variantRun) report.CompareSide {
		return report.CompareSide{Label: r.variant.Name, Dir: r.run.Dir, Report: r.variant.Name + "/" + timeline.ReportFile}
	}
	var page bytes.Buffer
	if err := report.WriteCompareHTML(&page, a.run, b.run, side(a), side(b), c); err != nil {
		return "", fmt.Errorf("compare %s and %s: %w", a.variant.Name, b.variant.Name, err)
	}
	if err := timeline.WriteFile(drillDir, drillCompareFile, page.Bytes()); err != nil {
		return "", fmt.Errorf("write %s: %w", drillCompareFile, err)
	}
	return absPath(filepath.Join(drillDir, drillCompareFile)), nil
}

// allowedNote is how the side-by-side table marks a rule the variant
// allows ("lock-contention (allowed)").
func allowedNote(v drills.Variant, rule string) string {
	if _, ok := v.Expect.Allows(rule); ok {
		return rule + " (allowed)"
	}
	return rule
}
