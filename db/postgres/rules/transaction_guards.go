package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/timeline"
)

// transactionGuards points out workload sessions that nothing stops from
// running a statement forever or sitting idle inside a transaction: the
// two ways one session holds locks and the xmin horizon for everyone.
type transactionGuards struct{}

var _ diagnose.Rule = transactionGuards{}

func (transactionGuards) ID() string { return "transaction-guards" }

// Inputs names the sources the rule reads.
func (transactionGuards) Inputs() diagnose.Inputs { return diagnose.Inputs{} }

// The guards, as PostgreSQL names them.
const (
	guardStatement   = "statement_timeout"
	guardIdle        = "idle_in_transaction_session_timeout"
	guardTransaction = "transaction_timeout" // PostgreSQL 17: bounds both
)

// samplerAppPrefix is the application_name of firedrill's sampler session.
// Settings read on that session show its own statement_timeout, not the
// server's.
const samplerAppPrefix = "firedrill-sampler"

// unguarded is a workload and the guards its sessions lack.
type unguarded struct {
	Workload string
	Missing  []string
	// Suggested values, from the workload's own latencies.
	Statement, Idle string
}

func (r transactionGuards) Check(run *timeline.Run) []diagnose.Finding {
	server := run.Manifest.Settings
	// The manifest's settings are read on the sampler's own session, which
	// sets its own statement_timeout: that value says nothing about the
	// workloads' sessions.
	serverStatementKnown := server != nil && !strings.HasPrefix(server["application_name"], samplerAppPrefix)
	var list []unguarded
	for _, w := range run.Manifest.Workloads {
		if !workloadRan(run, w.Name) {
			continue
		}
		get := func(name string) (string, string, bool) { // value, where from, known
			for k, v := range w.Settings {
				if strings.EqualFold(k, name) {
					return v, "workload", true
				}
			}
			if v, ok := server[name]; ok && (name != guardStatement || serverStatementKnown) {
				return v, "server", true
			}
			return "", "", false
		}
		txValue, _, txKnown := get(guardTransaction)
		txGuard := txKnown && timeoutOn(txValue)
		var missing []string
		for _, g := range []string{guardStatement, guardIdle} {
			v, _, known := get(g)
			if txGuard || known && timeoutOn(v) {
				continue
			}
			missing = append(missing, g)
		}
		if len(missing) == 0 {
			continue
		}
		stmt, idle := suggestedTimeouts(run, w.Name)
		list = append(list, unguarded{Workload: w.Name, Missing: missing, Statement: stmt, Idle: idle})
	}
	if len(list) == 0 {
		return nil
	}
	return []diagnose.Finding{r.finding(run, list, serverStatementKnown)}
}

func (r transactionGuards) finding(run *timeline.Run, list []unguarded, serverStatementKnown bool) diagnose.Finding {
	f := diagnose.Finding{Rule: r.ID(), Severity: diagnose.Info, Start: 0, End: diagnose.LoadEnd(run)}
	if len(list) == 1 {
		f.Workload = list[0].Workload
	}
	var names, adds []string
	for _, u := range list {
		names = append(names, fmt.Sprintf("%s (no %s)", u.Workload, strings.Join(u.Missing, ", no ")))
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "manifest:workloads." + u.Workload + ".settings",
			Text: fmt.Sprintf("workload %s runs without %s (0 = off)", u.Workload, strings.Join(u.Missing, " and "))})
	}
	server := run.Manifest.Settings
	switch {
	case server == nil:
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "manifest:settings",
			Text: "the server's settings were not recorded; PostgreSQL's default for both timeouts is 0 (off)"})
	default:
		v := server[guardIdle]
		if v == "" {
			v = "not recorded"
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "manifest:settings." + guardIdle,
			Text: fmt.Sprintf("server-wide %s = %s", guardIdle, v)})
		if serverStatementKnown {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "manifest:settings." + guardStatement,
				Text: fmt.Sprintf("server-wide %s = %s", guardStatement, server[guardStatement])})
		} else {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "manifest:settings." + guardStatement,
				Text: fmt.Sprintf("the recorded %s (%s) is the sampler's own session limit; the workloads' sessions "+
					"get the server's, PostgreSQL's default being 0 (off)", guardStatement, server[guardStatement])})
		}
	}
	u := list[0]
	for _, g := range u.Missing {
		switch g {
		case guardStatement:
			adds = append(adds, guardStatement+": "+u.Statement)
		case guardIdle:
			adds = append(adds, guardIdle+": "+u.Idle)
		}
	}
	if len(list) == 1 {
		f.Headline = fmt.Sprintf("Workload %s runs without %s: nothing ends a runaway statement or an abandoned "+
			"transaction; add settings {%s}", u.Workload, strings.Join(u.Missing, " and "), strings.Join(adds, ", "))
	} else if same := sameMissing(list); same {
		var ws []string
		for _, x := range list {
			ws = append(ws, x.Workload)
		}
		f.Headline = fmt.Sprintf("Workloads %s run without %s: nothing ends a runaway statement or an abandoned "+
			"transaction; add settings such as {%s}", strings.Join(ws, ", "), strings.Join(u.Missing, " and "), strings.Join(adds, ", "))
	} else {
		f.Headline = fmt.Sprintf("%d workloads run without transaction guards: %s; nothing ends a runaway statement or an "+
			"abandoned transaction; add settings such as {%s}", len(list), strings.Join(names, "; "), strings.Join(adds, ", "))
	}
	f.Mechanism = "A statement that never finishes, or a transaction left open while the application waits on something " +
		"else, keeps its locks and holds back the xmin horizon for the whole database: vacuum stops cleaning, " +
		"other sessions queue behind the locks, and multixact and subtransaction caches thrash. statement_timeout and " +
		"idle_in_transaction_session_timeout let the server end such a session on its own."
	var yaml, sql []string
	for _, u := range list {
		var kv []string
		for _, g := range u.Missing {
			val := u.Statement
			if g == guardIdle {
				val = u.Idle
			}
			kv = append(kv, g+": "+val)
			sql = append(sql, fmt.Sprintf("ALTER ROLE <app role> SET %s = '%s';", g, val))
		}
		yaml = append(yaml, fmt.Sprintf("workload %s: `settings: {%s}`", u.Workload, strings.Join(kv, ", ")))
	}
	f.Remedy = "In the scenario, " + strings.Join(yaml, "; ") + ". In the application, set them on its role so every pool " +
		"connection gets them: `" + strings.Join(uniqueStrings(sql), " ") + "` (values: 10× the slowest legitimate statement " +
		"seen in this run, rounded up; the idle limit above the longest pause inside a transaction). PostgreSQL 17 adds " +
		"transaction_timeout to bound a whole transaction."
	f.References = []string{
		"https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-STATEMENT-TIMEOUT",
		"https://www.postgresql.org/docs/current/runtime-config-client.html#GUC-IDLE-IN-TRANSACTION-SESSION-TIMEOUT",
		"https://www.postgresql.org/docs/current/sql-alterrole.html",
	}
	return f
}

// sameMissing reports whether every workload lacks the same guards.
func sameMissing(list []unguarded) bool {
	for _, u := range list[1:] {
		if strings.Join(u.Missing, ",") != strings.Join(list[0].Missing, ",") {
			return false
		}
	}
	return true
}

// workloadRan reports whether a workload has any measured interval or
// total: sessions that never existed need no guards.
func workloadRan(run *timeline.Run, name string) bool {
	for _, iv := range run.Intervals {
		if iv.Workload == name && iv.Count+iv.Failed > 0 {
			return true
		}
	}
	if run.Summary != nil {
		for _, w := range run.Summary.Workloads {
			if w.Name == name && w.Count+w.Failed > 0 {
				return true
			}
		}
	}
	return false
}

// timeoutOn reports whether a timeout setting is on: "0" (any unit) is off.
func timeoutOn(v string) bool {
	v = strings.TrimSpace(strings.Trim(strings.TrimSpace(v), `'"`))
	if v == "" {
		return false
	}
	end := 0
	for end < len(v) && (v[end] >= '0' && v[end] <= '9' || v[end] == '.' || v[end] == '-' || v[end] == '+') {
		end++
	}
	n, err := strconv.ParseFloat(v[:end], 64)
	if err != nil {
		return true // something that is not a number: a value PostgreSQL accepted, assume on
	}
	return n > 0
}

// suggestedTimeouts proposes values from the workload's latencies: the
// statement limit at 10× its slowest command's p99, the idle limit above
// twice its longest script's commands end to end (their p99s added up:
// from BEGIN to COMMIT, \sleep included, schedule lag excluded), each
// rounded up to a value people write and never below 5 s and 10 s.
func suggestedTimeouts(run *timeline.Run, workload string) (statement, idle string) {
	var slowestUS, scriptUS float64
	if run.Summary != nil {
		for _, w := range run.Summary.Workloads {
			if w.Name != workload {
				continue
			}
			for _, s := range w.Scripts {
				sum := 0.0
				for _, c := range s.Commands {
					slowestUS = math.Max(slowestUS, float64(c.LatencyPct.P99))
					sum += float64(c.LatencyPct.P99)
				}
				scriptUS = math.Max(scriptUS, sum)
			}
		}
	}
	return niceDuration(math.Max(5, 10*slowestUS/1e6)), niceDuration(math.Max(10, 2*scriptUS/1e6))
}

// niceDuration rounds seconds up to a setting people write: 5s, 10s, 30s, 1min …
func niceDuration(s float64) string {
	for _, step := range []struct {
		limit float64
		text  string
	}{{5, "5s"}, {10, "10s"}, {15, "15s"}, {30, "30s"}, {60, "1min"}, {120, "2min"}, {300, "5min"}, {600, "10min"}, {1800, "30min"}} {
		if s <= step.limit {
			return step.text
		}
	}
	return "1h"
}
