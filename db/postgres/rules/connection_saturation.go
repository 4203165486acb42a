package pgrules

import (
	"fmt"
	"github.com/firedrill/firedrill/diagnose"
	"math"
	"sort"
	"strings"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/timeline"
)

// connectionSaturation finds transactions waiting for a connection: the
// application pool empty (pool waits, pool timeouts), or the server at
// max_connections ("too many clients", 53300). It tells the two causes of
// an empty pool apart with Little's law: each transaction holds a
// connection for pool ÷ throughput; when most of that time is spent
// executing queries, slow queries exhaust the pool and a bigger one only
// moves the queue into a busy database; when the queries are quick and
// the time goes elsewhere, the pool is simply too small for the arrival
// rate (rate × hold time > pool size).
type connectionSaturation struct{}

var _ diagnose.Rule = connectionSaturation{}

func (connectionSaturation) ID() string { return "connection-saturation" }

// Inputs names the sources the rule reads.
func (connectionSaturation) Inputs() diagnose.Inputs {
	return diagnose.Inputs{Also: []string{pgmetric.Activity, pgmetric.Database, pgmetric.Statements, hostmetric.Host}}
}

// Thresholds.
const (
	tooManyClientsCode = "53300"
)

func (connectionSaturation) Check(run *timeline.Run) []diagnose.Finding {
	pools := diagnose.PoolFindings(run, poolServer)
	if f, ok := serverLimitFinding(run); ok {
		f, pools = diagnose.OneCause(run, f, pools)
		return append(pools, f)
	}
	return pools
}

// poolServer is what pg_stat_activity and pg_stat_statements tell of a
// saturated pool's sessions in the database.
var poolServer = diagnose.PoolServer{
	Active: activeOf,
	Busy: func(run *timeline.Run, from, to float64) diagnose.Stats {
		return diagnose.Over(run.Series(activitySource, pgmetric.AAS), from, to)
	},
	TopStatement: func(run *timeline.Run, from, to float64) (diagnose.PoolStatement, bool) {
		top, share := topStatementIn(run, from, to)
		return diagnose.PoolStatement{Series: pgmetric.Series(pgmetric.Statements, top.ID()), Query: top.Query, MeanMS: top.MeanMS, Share: share}, top.Calls > 0
	},
	References: []string{
		"https://www.postgresql.org/docs/current/runtime-config-connection.html#GUC-MAX-CONNECTIONS",
		"https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ACTIVITY-VIEW",
	},
	LimitSetting: "max_connections",
}

// activeOf is the mean number of a workload's sessions active in the
// database over a window (its application_name's), or all of them when
// the run has one workload, with the series it reads; ok is false without
// the series.
func activeOf(run *timeline.Run, workload string, from, to float64) (mean float64, series string, ok bool) {
	series = activitySource + ":app." + workloadAppPrefix + workload + ".active"
	pts := run.Series(activitySource, "app."+workloadAppPrefix+workload+".active")
	if len(pts) == 0 && len(run.Manifest.Workloads) <= 1 {
		pts = run.Series(activitySource, pgmetric.AAS)
	}
	st := diagnose.Over(pts, from, to)
	if st.N == 0 {
		// The series omits a workload with no session at a tick: absent
		// values in a window where the sampler ran are zeros.
		if diagnose.Over(run.Series(activitySource, pgmetric.AAS), from, to).N > 0 {
			return 0, series, true
		}
		return 0, series, false
	}
	n := diagnose.Over(run.Series(activitySource, pgmetric.AAS), from, to).N
	return st.Mean * float64(st.N) / float64(max(n, st.N)), series, true
}

// topStatementIn is the statement with the most execution time in a window.
func topStatementIn(run *timeline.Run, from, to float64) (pgmetric.Statement, float64) {
	sum := map[string]*pgmetric.Statement{}
	total := 0.0
	for _, s := range run.SourceSamples(pgmetric.Statements) {
		if s.T < from || s.T > to || s.Error != "" {
			continue
		}
		var top []pgmetric.Statement
		if !diagnose.Detail(&s, &top) {
			continue
		}
		for _, d := range top {
			x := sum[d.ID()]
			if x == nil {
				x = &pgmetric.Statement{QueryID: d.QueryID, Query: d.Query}
				sum[d.ID()] = x
			}
			x.Calls += d.Calls
			x.TotalMS += d.TotalMS
			total += d.TotalMS
		}
	}
	var best pgmetric.Statement
	for _, d := range sum {
		if d.TotalMS > best.TotalMS {
			best = *d
		}
	}
	if best.Calls > 0 {
		best.MeanMS = best.TotalMS / best.Calls
	}
	share := 0.0
	if total > 0 {
		share = best.TotalMS / total
	}
	return best, share
}

// refusedByLimit counts an interval's connection attempts the server
// refused while up (at its connection limit), by code: the target's
// classification (Interval.Refused), or in a run recorded before it,
// PostgreSQL's 53300.
func refusedByLimit(iv *timeline.Interval) map[string]int64 {
	if iv.Refused != nil || iv.Unavailable != nil || iv.Lost != nil {
		return iv.Refused
	}
	if n := iv.Errors[tooManyClientsCode]; n > 0 {
		return map[string]int64{tooManyClientsCode: n}
	}
	return nil
}

// refusedWorkload is what one workload's clients met at the limit.
type refusedWorkload struct {
	name           string
	refused        int64            // attempts refused
	codes          map[string]int64 // by code
	clients        int              // clients wanted, most in an interval
	waitingPeak    int              // clients without a session, most at an interval's end
	waitingLast    int              // and at the last interval's end
	refusedClients int              // clients refused at least once (summary)
	first, last    float64
}

// serverLimitFinding reports connections at max_connections (less the
// superuser's reserve) and connection attempts the server refused
// (53300 too many clients): how many of the clients got no session.
func serverLimitFinding(run *timeline.Run) (diagnose.Finding, bool) {
	var errs int64
	errFrom, errTo := math.Inf(1), math.Inf(-1)
	byWorkload := map[string]*refusedWorkload{}
	for i := range run.Intervals {
		iv := &run.Intervals[i]
		codes := refusedByLimit(iv)
		w := byWorkload[iv.Workload]
		if w == nil {
			w = &refusedWorkload{name: iv.Workload, codes: map[string]int64{}}
			byWorkload[iv.Workload] = w
		}
		w.clients = max(w.clients, iv.Clients)
		w.waitingPeak = max(w.waitingPeak, iv.Unconnected)
		w.waitingLast = iv.Unconnected
		for code, n := range codes {
			if n <= 0 {
				continue
			}
			if w.refused == 0 {
				w.first = iv.Start
			}
			w.refused += n
			w.codes[code] += n
			w.last = iv.End
			errs += n
			errFrom, errTo = min(errFrom, iv.Start), max(errTo, iv.End)
		}
	}
	maxConn := diagnose.Over(run.Series(pgmetric.Database, pgmetric.MaxConnections), 0, math.Inf(1))
	reserved := diagnose.Over(run.Series(pgmetric.Database, pgmetric.SuperuserReservedConnections), 0, math.Inf(1))
	conns := run.Series(activitySource, pgmetric.ConnectionsTotal)
	maxText := diagnose.Setting(run, "max_connections", "")
	if maxConn.N > 0 {
		maxText = diagnose.HumanNum(maxConn.Last)
	}
	reservedText := diagnose.Setting(run, "superuser_reserved_connections", "")
	if reserved.N > 0 {
		reservedText = diagnose.HumanNum(reserved.Last)
	}
	// The server keeps superuser_reserved_connections of max_connections
	// for superusers: others are refused past max_connections − reserved,
	// a superuser only past max_connections. More of the workloads'
	// sessions than the others' limit (firedrill's samplers, a superuser,
	// may take reserved slots beside them) means the run's role took the
	// reserved slots: its limit is max_connections.
	limit, superuser := 0.0, false
	if maxConn.N > 0 {
		limit = maxConn.Last - reserved.Last
		if reserved.Last > 0 && workloadSessionsPeak(run) > limit {
			limit, superuser = maxConn.Last, true
		}
	}
	var atLimit []timeline.Point
	if limit > 0 {
		for _, p := range conns {
			if p.V >= limit {
				atLimit = append(atLimit, p)
			}
		}
	}
	if errs == 0 && len(atLimit) == 0 {
		return diagnose.Finding{}, false
	}
	f := diagnose.Finding{Severity: diagnose.Warning,
		References: []string{
			"https://www.postgresql.org/docs/current/runtime-config-connection.html#GUC-MAX-CONNECTIONS",
			"https://www.postgresql.org/docs/current/runtime-config-connection.html#GUC-SUPERUSER-RESERVED-CONNECTIONS",
			"https://github.com/brettwooldridge/HikariCP/wiki/About-Pool-Sizing",
		}}
	if errs > 0 {
		f.Severity, f.Lasting = diagnose.Critical, true // refused connections stay refused
		f.Start, f.End = errFrom, errTo
	}
	limitText := "max_connections " + cmpOr(maxText, "?")
	if superuser {
		limitText += fmt.Sprintf(" (the run's role is a superuser: it took the %s reserved slots too)", reservedText)
	} else if reservedText != "" && reservedText != "0" {
		limitText += fmt.Sprintf(" (%s of them reserved for superusers)", reservedText)
	}
	if len(atLimit) > 0 {
		if errs == 0 {
			f.Start, f.End = math.Max(0, atLimit[0].T-diagnose.Tick(run)), atLimit[len(atLimit)-1].T
		}
		peak := diagnose.Over(conns, 0, math.Inf(1))
		how := fmt.Sprintf("max_connections %s − %s reserved for superusers", diagnose.HumanNum(maxConn.Last), diagnose.HumanNum(reserved.Last))
		if superuser {
			how = fmt.Sprintf("max_connections %s: more than the %s others may open, so the run's role is a superuser and took the %s reserved slots too",
				diagnose.HumanNum(maxConn.Last), diagnose.HumanNum(maxConn.Last-reserved.Last), diagnose.HumanNum(reserved.Last))
		}
		f.Evidence = append(f.Evidence, diagnose.Evidence{Series: pgmetric.Series(activitySource, pgmetric.ConnectionsTotal), T: peak.MaxT, Value: peak.Max,
			Text: fmt.Sprintf("%s connections at %.0f s, at the limit of %s (%s), in %d samples",
				diagnose.HumanNum(peak.Max), peak.MaxT, diagnose.HumanNum(limit), how, len(atLimit))})
	}
	var refused []*refusedWorkload
	for _, w := range byWorkload {
		if w.refused > 0 {
			if ws := workloadSummary(run, w.name); ws != nil {
				w.refusedClients = ws.RefusedClients
			}
			refused = append(refused, w)
		}
	}
	sort.Slice(refused, func(i, j int) bool { return refused[i].name < refused[j].name })
	var who []string
	for _, w := range refused {
		var codes []string
		for code := range w.codes {
			codes = append(codes, code)
		}
		sort.Slice(codes, func(i, j int) bool {
			return w.codes[codes[i]] > w.codes[codes[j]] || w.codes[codes[i]] == w.codes[codes[j]] && codes[i] < codes[j]
		})
		for _, code := range codes {
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + w.name + ".refused." + code, T: w.last, Value: float64(w.codes[code]),
				Text: fmt.Sprintf("%s connection attempts of %s refused from %.0f s to %.0f s: %s", diagnose.HumanNum(float64(w.codes[code])), w.name, w.first, w.last, refusalText(run, w.name, code))})
		}
		if n := w.clientsRefused(); n > 0 {
			text := fmt.Sprintf("%d of %s's %d clients could not get a connection", n, w.name, w.clients)
			if w.waitingPeak > 0 {
				text += fmt.Sprintf("; up to %d at once were waiting to retry (backing off 10 ms → 1 s), %d at the end", w.waitingPeak, w.waitingLast)
			}
			f.Evidence = append(f.Evidence, diagnose.Evidence{Series: "workload:" + w.name + ".unconnected", T: w.last, Value: float64(n), Text: text})
			who = append(who, fmt.Sprintf("%d of the %d clients of %s", n, w.clients, w.name))
		}
	}
	if len(refused) == 1 {
		f.Workload = refused[0].name
	}
	codeText := ""
	if len(refused) > 0 {
		var top string
		var topN int64
		codes := map[string]int64{}
		for _, w := range refused {
			for code, n := range w.codes {
				codes[code] += n
			}
		}
		for code, n := range codes {
			if n > topN || n == topN && code < top {
				top, topN = code, n
			}
		}
		codeText = refusalText(run, refused[0].name, top)
	}
	switch {
	case errs > 0 && len(who) > 0:
		f.Headline = fmt.Sprintf("The server refused %s connections (%s): %s got no connection at %s",
			diagnose.HumanNum(float64(errs)), codeText, strings.Join(who, ", "), limitText)
	case errs > 0:
		f.Headline = fmt.Sprintf("The server refused %s connections (%s): connections reached %s", diagnose.HumanNum(float64(errs)), codeText, limitText)
	default:
		f.Headline = fmt.Sprintf("Connections reached the server's limit (%s usable of max_connections %s): the next client will be refused", diagnose.HumanNum(limit), diagnose.HumanNum(maxConn.Last))
		if superuser {
			f.Headline += " (the run's role is a superuser: it took the reserved slots too)"
		}
	}
	f.Mechanism = "Every connection is a server process with its own memory, so PostgreSQL caps them at max_connections (minus superuser_reserved_connections kept for administrators); past the cap new connections fail at once with 53300. " +
		"Many clients each opening their own connections, or pools sized without regard to the other pools, reach it long before the server runs out of CPU. " +
		"A refused client gets nothing done: here, as an application's pool would, it retried with growing pauses, so the run measured the clients that got in while the others waited."
	f.Remedy = "Put the clients behind a pool (in the application, or PgBouncer in transaction mode) whose total size across all application instances stays below max_connections − superuser_reserved_connections"
	if maxConn.N > 0 {
		f.Remedy += fmt.Sprintf(" (here %s, less the other sessions: monitoring, migrations)", diagnose.HumanNum(maxConn.Last-reserved.Last))
	}
	if superuser {
		f.Remedy += "; do not connect the application as a superuser: it takes the slots kept for administrators, who then cannot get in to fix it"
	}
	f.Remedy += "; raise max_connections only with the memory for it (each backend: work_mem and more) and a restart."
	return f, true
}

// workloadSessionsPeak is the most sessions the run's workloads held at
// once (their application_names in pg_stat_activity), not counting
// firedrill's samplers and events.
func workloadSessionsPeak(run *timeline.Run) float64 {
	at := map[float64]float64{}
	for _, w := range run.Manifest.Workloads {
		for _, p := range run.Series(activitySource, pgmetric.AppPrefix+workloadAppPrefix+w.Name+".sessions") {
			at[p.T] += p.V
		}
	}
	peak := 0.0
	for _, v := range at {
		peak = max(peak, v)
	}
	return peak
}

// clientsRefused is how many of the workload's clients were refused a
// connection: counted by the engine, or at least the most that waited at
// once.
func (w *refusedWorkload) clientsRefused() int {
	return max(w.refusedClients, w.waitingPeak)
}

// refusalText names a refusal's code with what it means: the server's
// message from the summary ("53300 sorry, too many clients already").
func refusalText(run *timeline.Run, workload, code string) string {
	if es := diagnose.WorkloadError(run, workload, code); es != nil {
		msg := diagnose.FirstLine(es.Message)
		if i := strings.LastIndex(msg, "FATAL: "); i >= 0 {
			msg = msg[i+len("FATAL: "):]
		}
		msg = strings.TrimSpace(strings.TrimSuffix(msg, "(SQLSTATE "+code+")"))
		return code + " " + msg
	}
	if code == tooManyClientsCode {
		return code + " too many clients"
	}
	return code
}

// workloadSummary is a workload's totals, nil without a summary.
func workloadSummary(run *timeline.Run, name string) *timeline.WorkloadSummary {
	if run.Summary == nil {
		return nil
	}
	for i := range run.Summary.Workloads {
		if run.Summary.Workloads[i].Name == name {
			return &run.Summary.Workloads[i]
		}
	}
	return nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
