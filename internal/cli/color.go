package cli

import (
	"regexp"
	"strings"

	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/timeline"
)

// The lines paintLine colours, by the shapes report, live and drill
// print them; anything else passes as it is (JSON on stdout included:
// none of these shapes matches a JSON line).
var (
	// "  ok   oltp.p99 < 50ms: …", "  FAIL oltp.p99 …" (thresholds) and
	// "  PASS  broken …", "  FAIL  …", "  SKIP  …" (drill expectations).
	verdictLine = regexp.MustCompile(`^(\s+)(ok|PASS|FAIL|SKIP)( )`)
	// "[CRITICAL] headline  (rule, 10–40 s)": a finding in a summary.
	findingLine = regexp.MustCompile(`^\[(CRITICAL|WARNING|INFO)\]( .*)$`)
	// "   12.0 s  CRITICAL  headline — fix  (rule)": a live finding, also
	// "now CRITICAL", "again WARNING" and "resolved:".
	liveLine = regexp.MustCompile(`^(\s*[0-9.]+ s  )((?:now |again )?(?:CRITICAL|WARNING|INFO)|resolved:)(  ?)`)
	// "run oltp: completed (runs/…)": the summary's first line.
	statusLine = regexp.MustCompile(`^(run \S+: )([a-z]+)( \()`)
	// "2 of 5 thresholds failed", "1 of 9 expectations failed".
	failedCount = regexp.MustCompile(`^\d+ of \d+ (?:thresholds|expectations) failed`)
)

// paint colours s, always: paintLine runs only when colour is on.
func paint(color, s string) string { return clikit.Paint(true, color, s) }

// severityColor is each severity's colour, as drill and compare paint it.
var severityColor = map[string]string{"CRITICAL": clikit.Red, "WARNING": clikit.Yellow, "INFO": clikit.Cyan}

// paintLine colours one line of firedrill's terminal output: verdicts,
// severities and a run's status. It is clikit.LineWriter's painter for
// the command line's stdout and stderr.
func paintLine(line string) string {
	if strings.Contains(line, "\x1b[") {
		return line // painted by the command itself (drill, compare)
	}
	if m := verdictLine.FindStringSubmatchIndex(line); m != nil {
		word := line[m[4]:m[5]]
		var painted string
		switch word {
		case "ok", "PASS":
			painted = paint(clikit.Green, word)
		case "FAIL":
			painted = paint(clikit.Red, word)
		default:
			painted = paint(clikit.Dim, word)
		}
		return line[:m[4]] + painted + line[m[5]:]
	}
	if m := findingLine.FindStringSubmatch(line); m != nil {
		head, rest, _ := strings.Cut(m[2][1:], "  (")
		if rest != "" {
			rest = "  (" + rest
		}
		return paint(severityColor[m[1]], "["+m[1]+"]") + " " + paint(clikit.Bold, head) + paint(clikit.Dim, rest)
	}
	if m := liveLine.FindStringSubmatchIndex(line); m != nil {
		label := line[m[4]:m[5]]
		var painted string
		switch {
		case label == "resolved:":
			painted = paint(clikit.Green, label)
		case strings.HasSuffix(label, "CRITICAL"):
			painted = paint(clikit.Red, label)
		case strings.HasSuffix(label, "WARNING"):
			painted = paint(clikit.Yellow, label)
		default:
			painted = paint(clikit.Cyan, label)
		}
		return line[:m[4]] + painted + line[m[5]:]
	}
	if m := statusLine.FindStringSubmatchIndex(line); m != nil {
		status := line[m[4]:m[5]]
		painted := paint(clikit.Red, status)
		switch status {
		case timeline.StatusCompleted:
			painted = paint(clikit.Green, status)
		case timeline.StatusInterrupted:
			painted = paint(clikit.Yellow, status)
		}
		return line[:m[4]] + painted + line[m[5]:]
	}
	if failedCount.MatchString(line) {
		return paint(clikit.Red, line)
	}
	if strings.HasPrefix(line, "all ") && strings.Contains(line, " expectations hold") {
		return paint(clikit.Green, line)
	}
	return line
}

// paintStreams makes env's stdout and stderr colour firedrill's lines
// (paintLine) when each is a terminal and colour is not turned off; the
// decision is made at each write, after --no-color is parsed.
func paintStreams(env *clikit.Env) {
	env.Stdout = clikit.LineWriter(env.Stdout, env.Color, paintLine)
	env.Stderr = clikit.LineWriter(env.Stderr, env.StderrColor, paintLine)
}

// flushStreams writes what paintStreams's writers hold of an unfinished
// line.
func flushStreams(env *clikit.Env) {
	clikit.FlushLines(env.Stdout)
	clikit.FlushLines(env.Stderr)
}
