package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/report"
	"github.com/firedrill/firedrill/timeline"
)

// liveDiagnosis re-reads the run directory now and then while the run goes
// on and says, one line each, when a finding first reaches WARNING or
// CRITICAL, when its severity rises, and when it resolves; at the end it
// says which live findings the final report downgraded or dropped. The
// rules read only the run directory, so the final report is the same
// rules over the whole run. A severity is shown only once it is stable
// (diagnose.Confirmation), so that what is shown live is what the final
// report keeps.
type liveDiagnosis struct {
	backends *backend.Registry // whose rules run on each pass
	w        io.Writer
	dir      func() string // the run directory, once the runner made it
	verbose  bool          // the finding's evidence too, not just its line
	quiet    bool          // print nothing (the passes still feed onPass)
	// onPass, if set, gets every pass's findings (the live /metrics).
	onPass  func([]diagnose.Finding)
	mu      sync.Mutex
	running bool
	last    time.Time
	// shown is each finding printed live (by rule and workload) with the
	// severity it was last shown at; resolved ones are kept, marked.
	shown map[string]*liveFinding
	order []string // keys of shown, in the order they were first printed
	// confirm holds each severity back until it has held for its window.
	confirm diagnose.Confirmation
}

// liveFinding is a finding as the live stream last showed it.
type liveFinding struct {
	diagnose.Finding
	resolved bool
}

// every is how often the rules run: each pass re-reads the whole timeline,
// so long runs check less often (about 2 % of the elapsed time).
func (l *liveDiagnosis) every(elapsed float64) time.Duration {
	return max(10*time.Second, time.Duration(elapsed/50*float64(time.Second)))
}

// tick is called on every sample tick; it starts a pass in the background
// when one is due and none is running.
func (l *liveDiagnosis) tick(elapsed float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dir := l.dir()
	if l.running || dir == "" || time.Since(l.last) < l.every(elapsed) {
		return
	}
	l.running, l.last = true, time.Now()
	go func() {
		defer func() {
			l.mu.Lock()
			l.running = false
			l.mu.Unlock()
		}()
		run, err := timeline.Open(dir)
		if err != nil {
			return // the next pass tries again
		}
		findings := diagnoseRun(l.backends, run)
		if l.onPass != nil {
			l.onPass(findings)
		}
		if !l.quiet {
			l.pass(elapsed, findings)
		}
	}()
}

// pass prints what changed since the last pass at elapsed seconds.
func (l *liveDiagnosis) pass(elapsed float64, findings []diagnose.Finding) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown == nil {
		l.shown = map[string]*liveFinding{}
	}
	seen := map[string]bool{}
	for _, f := range l.confirm.Confirm(elapsed, findings) {
		key := diagnose.LiveKey(f)
		seen[key] = true
		prev, ok := l.shown[key]
		switch {
		case ok && !prev.resolved && f.Resolved > 0:
			// The rule judges the incident over (and lowered it for that).
			prev.resolved = true
			fmt.Fprintf(l.w, "%7.1f s  resolved at %.0f s: %s  (%s)\n", elapsed, f.Resolved, prev.Headline, prev.Rule)
		case diagnose.SeverityRank(f.Severity) > diagnose.SeverityRank(diagnose.Warning):
			// Below WARNING: not worth an on-call engineer's attention now.
			// One shown earlier stays as it was shown; the end says so.
			continue
		case !ok:
			l.shown[key] = &liveFinding{Finding: f}
			l.order = append(l.order, key)
			l.line(elapsed, strings.ToUpper(f.Severity), f)
		case prev.resolved:
			prev.Finding, prev.resolved = f, false
			l.line(elapsed, "again "+strings.ToUpper(f.Severity), f)
		case diagnose.SeverityRank(f.Severity) < diagnose.SeverityRank(prev.Severity):
			prev.Finding = f
			l.line(elapsed, "now "+strings.ToUpper(f.Severity), f)
		default:
			prev.Finding.Headline, prev.Finding.Remedy = f.Headline, f.Remedy
		}
	}
	for _, key := range l.order {
		if prev := l.shown[key]; !seen[key] && !prev.resolved {
			prev.resolved = true
			fmt.Fprintf(l.w, "%7.1f s  resolved: %s  (%s)\n", elapsed, prev.Headline, prev.Rule)
		}
	}
}

// line prints one live finding: when, how severe, the headline and the
// fix's first sentence; with verbose, its evidence as before.
func (l *liveDiagnosis) line(elapsed float64, label string, f diagnose.Finding) {
	fmt.Fprintf(l.w, "%7.1f s  %s  %s — %s  (%s)\n", elapsed, label, f.Headline, firstSentence(f.Remedy), f.Rule)
	if l.verbose {
		report.WriteFinding(l.w, f)
	}
}

// summary says, after the final diagnosis, which findings shown live the
// final report downgraded or does not have, and why: the final report
// judges the whole run.
func (l *liveDiagnosis) summary(final []diagnose.Finding) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	for _, key := range l.order {
		live := l.shown[key]
		f, ok := diagnose.FinalOf(live.Finding, final)
		switch {
		case !diagnose.Withdrawn(live.Finding, final):
		case !ok:
			lines = append(lines, fmt.Sprintf("  %s (%s, shown live as %s): not in the final report — over the whole run the rule no longer sees it",
				live.Headline, live.Rule, strings.ToUpper(live.Severity)))
		default:
			lines = append(lines, fmt.Sprintf("  %s (%s): shown live as %s, %s in the final report — over the whole run: %s",
				live.Headline, live.Rule, strings.ToUpper(live.Severity), strings.ToUpper(f.Severity), f.Headline))
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(l.w, "live findings the final report judges otherwise:\n%s\n", strings.Join(lines, "\n"))
	}
}

// firstSentence is text up to its first sentence's end, leaving code in
// backquotes and "e.g." whole.
func firstSentence(text string) string {
	inCode := false
	for i := 0; i+1 < len(text); i++ {
		switch {
		case text[i] == '`':
			inCode = !inCode
		case !inCode && text[i] == '.' && (text[i+1] == ' ' || text[i+1] == '\n') &&
			!strings.HasSuffix(text[:i], "e.g") && !strings.HasSuffix(text[:i], "i.e"):
			return text[:i+1]
		}
	}
	return text
}

// wait lets a pass in flight finish, so its lines do not mix with the
// final summary.
func (l *liveDiagnosis) wait() {
	for {
		l.mu.Lock()
		r := l.running
		l.mu.Unlock()
		if !r {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
