package htmlpage

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/report/eventwords"
	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// page is what the template renders: the header and tables as values, the
// charts as placeholders the script fills from Data.
type page struct {
	assets
	Data template.JS

	M        *timeline.Manifest
	Duration float64
	Started  string
	Ended    string

	Findings []findingView
	Counts   severityCounts
	Charts   []chartSpec
	Omitted  []omittedChart // charts left out: nothing to draw

	HasSummary bool
	Workloads  []timeline.WorkloadSummary
	AnyPool    bool
	AnySkipped bool
	AnyRetries bool
	Scripts    []scriptView
	Errors     []errorView
	// ErrorsBy names the error codes of the errors table in their kinds'
	// terms: the one target's ("SQLSTATE"), or, in a run of several, those
	// of the targets whose workloads failed ("SQLSTATE and Redis error").
	ErrorsBy       string
	Events         []eventView
	Outages        []timeline.Outage
	Settings       []settingView
	SettingChanges []settingChange
	Samplers       []samplerView

	// Targets are the systems of a run of several, for the header;
	// WorkloadTargets names each workload's target. Both are empty in a
	// run of one system.
	Targets         []timeline.NamedTarget
	WorkloadTargets map[string]string
}

type severityCounts struct{ Critical, Warning, Info, Other int }

// findingView is a finding with its place in the page.
type findingView struct {
	diagnose.Finding
	ID   string // anchor of its detail
	Rank int
	// What and Fix are the headline's and the remedy's first clause, for
	// the one-line summary at the top.
	What, Fix string
}

type scriptView struct {
	Workload string
	timeline.ScriptSummary
	// Hidden is how many commands the table leaves out (see
	// maxCommandRows).
	Hidden int64
}

// maxCommandRows is the most commands a script's table lists: a generated
// script of 100,000 commands would make a page of tens of megabytes. The
// commands kept are those with the most time spent in them (and every one
// that failed or was retried), in script order; summary.json has them all.
const maxCommandRows = 1000

// newScriptView keeps at most maxCommandRows of a script's commands.
func newScriptView(workload string, sc timeline.ScriptSummary) scriptView {
	v := scriptView{Workload: workload, ScriptSummary: sc}
	if len(sc.Commands) <= maxCommandRows {
		return v
	}
	order := make([]int, len(sc.Commands))
	for i := range order {
		order[i] = i
	}
	weight := func(c *timeline.CommandSummary) float64 {
		if c.Failures > 0 || c.Retries > 0 {
			return math.Inf(1)
		}
		return float64(c.Count) * c.MeanUS
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(weight(&sc.Commands[b]), weight(&sc.Commands[a]))
	})
	order = order[:maxCommandRows]
	slices.Sort(order)
	kept := make([]timeline.CommandSummary, len(order))
	for i, j := range order {
		kept[i] = sc.Commands[j]
	}
	v.Commands, v.Hidden = kept, int64(len(sc.Commands)-len(kept))
	return v
}

type errorView struct {
	Workload string
	timeline.ErrorSummary
}

// eventView is one event: as planned, and as it happened (its marks).
type eventView struct {
	Name, Kind    string
	Planned       string // "at 1:00 for 30 s", empty if not in the manifest
	Start, End    float64
	Started       bool
	Ended         bool
	Outcome       string
	Error         string
	Detail        string // the marks' details in words (eventwords), each of several after its phase
	DetailIsEmpty bool
}

type settingView struct {
	Name, Value string
	Changed     bool // a settings event changed it during the run
}

// settingChange is one setting a settings event changed.
type settingChange struct {
	T              float64
	Event          string
	Name           string
	Before, After  string
	BeforeUnknown  bool
	AfterFromEvent bool
}

type samplerView struct {
	Name, Notes string
	Samples     int
	Failed      int
	LastError   string
}

// severityRank orders severities, most severe highest; an unknown
// severity ranks below info so it never hides a real one.
func severityRank(s string) int {
	switch s {
	case diagnose.Critical:
		return 3
	case diagnose.Warning:
		return 2
	case diagnose.Info:
		return 1
	}
	return 0
}

// startedText is when the run started, for a person; "" if unknown.
func startedText(run *timeline.Run) string {
	if run.Manifest.Started.IsZero() {
		return ""
	}
	return run.Manifest.Started.UTC().Format("2006-01-02 15:04:05 MST")
}

func buildPage(run *timeline.Run, findings []diagnose.Finding, kinds present.Kinds) (*page, error) {
	p := &page{M: &run.Manifest}
	p.Duration = runDuration(run)
	p.Started = startedText(run)
	if !run.Manifest.Ended.IsZero() {
		p.Ended = run.Manifest.Ended.UTC().Format("2006-01-02 15:04:05 MST")
	}

	p.Findings = sortFindings(findings)
	for _, f := range p.Findings {
		switch f.Severity {
		case diagnose.Critical:
			p.Counts.Critical++
		case diagnose.Warning:
			p.Counts.Warning++
		case diagnose.Info:
			p.Counts.Info++
		default:
			p.Counts.Other++
		}
	}

	if s := run.Summary; s != nil {
		p.HasSummary = true
		p.Workloads = s.Workloads
		for _, w := range s.Workloads {
			p.AnyPool = p.AnyPool || w.PoolWait != nil || w.PoolPct != (timeline.Percentiles{})
			p.AnySkipped = p.AnySkipped || w.Skipped > 0 || w.Late > 0
			p.AnyRetries = p.AnyRetries || w.Retried > 0 || w.Retries > 0
			for _, sc := range w.Scripts {
				p.Scripts = append(p.Scripts, newScriptView(w.Name, sc))
			}
			for _, e := range w.Errors {
				p.Errors = append(p.Errors, errorView{Workload: w.Name, ErrorSummary: e})
			}
		}
		slices.SortStableFunc(p.Errors, func(a, b errorView) int { return cmp.Compare(b.Count, a.Count) })
	}

	marks, planned := run.Marks, run.Manifest.Events
	if len(run.Manifest.Targets) > 0 {
		marks, planned = targetEvents(run)
		p.Targets = run.Manifest.Targets
		p.WorkloadTargets = map[string]string{}
		for _, w := range run.Manifest.Workloads {
			p.WorkloadTargets[w.Name] = w.Target
		}
	}
	p.ErrorsBy = errorsBy(run, p.Errors)
	bands := append(eventBands(marks), stallBands(run)...)
	p.Events = eventViews(planned, marks)
	p.Outages = run.Outages()
	if len(run.Manifest.Targets) == 0 {
		p.SettingChanges = settingChanges(run.Manifest.Settings, run.Marks)
		p.Settings = settingViews(run.Manifest.Settings, p.SettingChanges)
		p.Samplers = samplerViews(run)
	} else {
		p.SettingChanges, p.Settings, p.Samplers = targetSettings(run)
	}

	cd := buildCharts(run, kinds)
	p.Charts, p.Omitted = fitCharts(&cd)
	headings(p.Charts, run.Manifest.Targets)
	data := pageData{
		Duration: p.Duration,
		Xs:       cd.Xs,
		Cols:     cd.Cols,
		Charts:   p.Charts,
		Omitted:  p.Omitted,
		Events:   bands,
		Findings: []findingBand{}, // [] not null: the script maps over it
	}
	for _, f := range p.Findings {
		what := f.What
		if f.Target != "" {
			what = f.Target + ": " + what // the lanes run across every target's charts
		}
		data.Findings = append(data.Findings, findingBand{
			ID: f.ID, Severity: f.Severity, Start: f.Start, End: f.End, Headline: f.Headline, What: what,
		})
	}
	var err error
	if p.Data, err = encodeData(data); err != nil {
		return nil, err
	}
	return p, nil
}

// targetEvents are the marks and planned events of a run of several
// targets, each event named "<target>/<event>" so that two targets' events
// of one name stay apart and read as whose they are.
func targetEvents(run *timeline.Run) ([]timeline.Mark, []timeline.EventInfo) {
	name := func(target, event string) string {
		if target == "" {
			return event
		}
		return target + "/" + event
	}
	marks := make([]timeline.Mark, len(run.Marks))
	for i, m := range run.Marks {
		m.Event = name(m.Target, m.Event)
		marks[i] = m
	}
	planned := make([]timeline.EventInfo, len(run.Manifest.Events))
	for i, e := range run.Manifest.Events {
		e.Name = name(e.Target, e.Name)
		planned[i] = e
	}
	return marks, planned
}

// targetSettings are the settings, their changes and the samplers of each
// target of a run of several, each named "<target>: <name>", and the
// host's samplers.
func targetSettings(run *timeline.Run) (changes []settingChange, settings []settingView, samplers []samplerView) {
	host := &timeline.Run{Manifest: timeline.Manifest{Samplers: run.Manifest.Samplers}}
	for _, s := range run.Samples {
		if s.Target == "" {
			host.Samples = append(host.Samples, s)
		}
	}
	samplers = samplerViews(host)
	for _, nt := range run.Manifest.Targets {
		view := run.ForTarget(nt.Name)
		var marks []timeline.Mark
		for _, m := range view.Marks {
			if m.Target == nt.Name {
				m.Event = nt.Name + "/" + m.Event
				marks = append(marks, m)
			}
		}
		ch := settingChanges(nt.Settings, marks)
		for _, v := range settingViews(nt.Settings, ch) {
			v.Name = nt.Name + ": " + v.Name
			settings = append(settings, v)
		}
		for _, c := range ch {
			c.Name = nt.Name + ": " + c.Name
			changes = append(changes, c)
		}
		own := &timeline.Run{Manifest: timeline.Manifest{Samplers: nt.Samplers}}
		for _, s := range run.Samples {
			if s.Target == nt.Name {
				own.Samples = append(own.Samples, s)
			}
		}
		for _, v := range samplerViews(own) {
			v.Name = nt.Name + ": " + v.Name
			samplers = append(samplers, v)
		}
	}
	slices.SortStableFunc(changes, func(a, b settingChange) int { return cmp.Compare(a.T, b.T) })
	return changes, settings, samplers
}

// headings puts a heading on the first chart kept of each group of a run
// of several targets: the target's name and server, or the host's.
func headings(charts []chartSpec, targets []timeline.NamedTarget) {
	last := ""
	for i := range charts {
		c := &charts[i]
		if c.Group == "" || c.Group == last {
			continue
		}
		last = c.Group
		c.Heading = "The host and firedrill"
		if name, ok := strings.CutPrefix(c.Group, serviceGroup); ok {
			c.Heading = "Service " + name
		}
		if nt, ok := (&timeline.Manifest{Targets: targets}).NamedTarget(c.Group); ok {
			c.Heading = nt.Name + ": " + nt.Target.ProductName() + " " + nt.Target.ServerVersion
		}
	}
}

// pageData is the JSON blob the script draws from.
type pageData struct {
	Duration float64        `json:"duration"`
	Xs       []timeColumn   `json:"xs"`   // time axes, shared by columns
	Cols     []column       `json:"cols"` // values, each on one of Xs
	Charts   []chartSpec    `json:"charts"`
	Omitted  []omittedChart `json:"omitted"`
	Events   []eventBand    `json:"events"`
	Findings []findingBand  `json:"findings"`
}

// eventBand is an event's span on the charts.
type eventBand struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"`
	Start   float64 `json:"t0"`
	End     float64 `json:"t1"` // = Start for a moment; -1 if it never ended
	Outcome string  `json:"outcome,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// findingBand is a finding's window on the charts.
type findingBand struct {
	ID       string  `json:"id"`
	Severity string  `json:"severity"`
	Start    float64 `json:"t0"`
	End      float64 `json:"t1"`
	Headline string  `json:"headline"`
	What     string  `json:"what,omitempty"` // the headline's first clause, for the lane
}

// runDuration is how long the run lasted: the summary's word, else the
// manifest's clock, else the last thing on the timeline.
func runDuration(run *timeline.Run) float64 {
	d := 0.0
	if run.Summary != nil {
		d = run.Summary.Duration
	}
	if d <= 0 && !run.Manifest.Started.IsZero() && !run.Manifest.Ended.IsZero() {
		d = run.Manifest.Ended.Sub(run.Manifest.Started).Seconds()
	}
	// The timeline can outlast the summary's duration by a partial tick.
	for _, iv := range run.Intervals {
		d = math.Max(d, iv.End)
	}
	if n := len(run.Samples); n > 0 {
		d = math.Max(d, run.Samples[n-1].T)
	}
	if n := len(run.Marks); n > 0 {
		d = math.Max(d, run.Marks[n-1].T)
	}
	return d
}

func sortFindings(findings []diagnose.Finding) []findingView {
	out := make([]findingView, len(findings))
	for i, f := range findings {
		out[i] = findingView{Finding: f, Rank: severityRank(f.Severity), What: firstClause(f.Headline), Fix: firstStep(f.Remedy)}
	}
	slices.SortStableFunc(out, func(a, b findingView) int {
		if c := cmp.Compare(b.Rank, a.Rank); c != 0 {
			return c
		}
		return cmp.Compare(a.Start, b.Start)
	})
	for i := range out {
		out[i].ID = fmt.Sprintf("finding-%d", i+1)
	}
	return out
}

// eventBands pairs each start mark with the next end mark of the same
// event; an end without a start is drawn as a moment.
func eventBands(marks []timeline.Mark) []eventBand {
	bands := []eventBand{}
	open := map[string][]int{} // event → indexes of its unended bands
	for _, m := range marks {
		switch m.Phase {
		case timeline.PhaseEnd:
			if q := open[m.Event]; len(q) > 0 {
				b := &bands[q[0]]
				open[m.Event] = q[1:]
				b.End, b.Outcome, b.Error = m.T, m.Outcome, m.Error
				continue
			}
			bands = append(bands, eventBand{Name: m.Event, Kind: m.Kind, Start: m.T, End: m.T, Outcome: m.Outcome, Error: m.Error})
		default:
			open[m.Event] = append(open[m.Event], len(bands))
			bands = append(bands, eventBand{Name: m.Event, Kind: m.Kind, Start: m.T, End: -1, Outcome: m.Outcome, Error: m.Error})
		}
	}
	return bands
}

func eventViews(planned []timeline.EventInfo, marks []timeline.Mark) []eventView {
	var out []eventView
	index := map[string]int{}
	type phaseDetail struct {
		phase  string
		detail map[string]any
	}
	details := map[string][]phaseDetail{}
	for _, e := range planned {
		index[e.Name] = len(out)
		v := eventView{Name: e.Name, Kind: e.Kind, Planned: "at " + clock(e.At)}
		if e.Duration > 0 {
			v.Planned += fmt.Sprintf(" for %s", durationText(e.Duration))
		}
		out = append(out, v)
	}
	for _, m := range marks {
		i, ok := index[m.Event]
		if !ok {
			i = len(out)
			index[m.Event] = i
			out = append(out, eventView{Name: m.Event, Kind: m.Kind})
		}
		v := &out[i]
		if v.Kind == "" {
			v.Kind = m.Kind
		}
		if m.Phase == timeline.PhaseEnd {
			if !v.Ended {
				v.End = m.T
			}
			v.Ended = true
			v.Outcome = cmp.Or(m.Outcome, v.Outcome)
			v.Error = cmp.Or(m.Error, v.Error)
		} else if !v.Started {
			v.Started, v.Start = true, m.T
		}
		if len(m.Detail) > 0 {
			details[m.Event] = append(details[m.Event], phaseDetail{m.Phase, m.Detail})
		}
	}
	// In words, as the terminal says them: "pid 4242, xid 771234", each
	// of several marks' after its phase ("start: …; end: …").
	for i := range out {
		d := details[out[i].Name]
		switch len(d) {
		case 0:
			out[i].DetailIsEmpty = true
		case 1:
			out[i].Detail = eventwords.Detail(d[0].detail)
		default:
			parts := make([]string, len(d))
			for j, pd := range d {
				parts[j] = cmp.Or(pd.phase, "mark") + ": " + eventwords.Detail(pd.detail)
			}
			out[i].Detail = strings.Join(parts, "; ")
		}
	}
	return out
}

// settingChanges reads what settings events changed from their marks'
// detail "changed", in whichever of the plain shapes an event writes:
// {"name": "new"}, {"name": {"old": …, "new": …}} or a list of
// {"name": …, "old"/"from": …, "new"/"to"/"value": …}.
func settingChanges(initial map[string]string, marks []timeline.Mark) []settingChange {
	current := map[string]string{}
	for k, v := range initial {
		current[k] = v
	}
	var out []settingChange
	add := func(m timeline.Mark, name string, before, after any) {
		c := settingChange{T: m.T, Event: m.Event, Name: name, AfterFromEvent: true}
		if after != nil {
			c.After = valueText(after)
		}
		if before != nil {
			c.Before = valueText(before)
		} else if v, ok := current[name]; ok {
			c.Before = v
		} else {
			c.BeforeUnknown = true
		}
		current[name] = c.After
		out = append(out, c)
	}
	for _, m := range marks {
		changed, ok := m.Detail["changed"]
		if !ok {
			continue
		}
		switch ch := changed.(type) {
		case map[string]any:
			names := make([]string, 0, len(ch))
			for k := range ch {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, name := range names {
				if pair, ok := ch[name].(map[string]any); ok {
					add(m, name, firstOf(pair, "old", "from", "before"), firstOf(pair, "new", "to", "after", "value"))
				} else {
					add(m, name, nil, ch[name])
				}
			}
		case []any:
			for _, e := range ch {
				switch e := e.(type) {
				case map[string]any:
					name, _ := firstOf(e, "name", "setting").(string)
					add(m, name, firstOf(e, "old", "from", "before"), firstOf(e, "new", "to", "after", "value"))
				case string:
					name, value, _ := strings.Cut(e, "=")
					add(m, strings.TrimSpace(name), nil, strings.TrimSpace(value))
				}
			}
		}
	}
	return out
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func valueText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func settingViews(settings map[string]string, changes []settingChange) []settingView {
	changed := map[string]bool{}
	for _, c := range changes {
		changed[c.Name] = true
	}
	out := make([]settingView, 0, len(settings))
	for k, v := range settings {
		out = append(out, settingView{Name: k, Value: v, Changed: changed[k]})
	}
	slices.SortFunc(out, func(a, b settingView) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func samplerViews(run *timeline.Run) []samplerView {
	index := map[string]int{}
	var out []samplerView
	for _, s := range run.Manifest.Samplers {
		index[s.Name] = len(out)
		out = append(out, samplerView{Name: s.Name, Notes: s.Notes})
	}
	for i := range run.Samples {
		s := &run.Samples[i]
		j, ok := index[s.Source]
		if !ok {
			j = len(out)
			index[s.Source] = j
			out = append(out, samplerView{Name: s.Source})
		}
		out[j].Samples++
		if s.Error != "" {
			out[j].Failed++
			out[j].LastError = s.Error
		}
	}
	return out
}

// clock formats seconds since the run's start as m:ss (h:mm:ss past an
// hour), the axis the charts use.
func clock(sec float64) string {
	neg := sec < 0
	if neg {
		sec = -sec
	}
	s := int64(math.Round(sec))
	var out string
	if s >= 3600 {
		out = fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	} else {
		out = fmt.Sprintf("%d:%02d", s/60, s%60)
	}
	if neg {
		return "-" + out
	}
	return out
}

// windowText formats a window as "1:05–2:30 (85 s)", a moment as "at 1:05".
func windowText(t0, t1 float64) string {
	if t1 <= t0 {
		return "at " + clock(t0)
	}
	return fmt.Sprintf("%s–%s (%s)", clock(t0), clock(t1), durationText(t1-t0))
}

func durationText(sec float64) string {
	if sec < 120 {
		return trimFloat(sec, 1) + " s"
	}
	return (time.Duration(math.Round(sec)) * time.Second).String()
}

// msFromUS turns microseconds into milliseconds for msText.
func msFromUS(us int64) float64 { return float64(us) / 1000 }

// msText formats milliseconds with three significant digits.
func msText(ms float64) string {
	switch {
	case ms == 0:
		return "0"
	case ms < 0.001:
		return "<0.001"
	case ms < 1:
		return trimFloat(ms, 3)
	case ms < 10:
		return trimFloat(ms, 2)
	case ms < 100:
		return trimFloat(ms, 1)
	}
	return fmt.Sprintf("%.0f", ms)
}

func trimFloat(v float64, digits int) string {
	s := fmt.Sprintf("%.*f", digits, v)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// countText groups thousands with a thin space: 1 234 567.
func countText(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// numText formats an evidence value: integers grouped, others with four
// significant digits.
func numText(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return countText(int64(v))
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func rateText(v float64) string {
	if v >= 100 {
		return countText(int64(math.Round(v)))
	}
	return trimFloat(v, 1)
}

func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// severityClass is the CSS class of a severity; anything unknown is
// drawn as info rather than breaking the page.
func severityClass(s string) string {
	switch s {
	case diagnose.Critical, diagnose.Warning, diagnose.Info:
		return "sev-" + s
	}
	return "sev-info"
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// errorsBy names the error codes of errs: the run's target's kind of
// codes, or each kind's among the targets whose workloads have errors in
// a run of several (in the order of the targets).
func errorsBy(run *timeline.Run, errs []errorView) string {
	if len(run.Manifest.Targets) == 0 {
		return run.Manifest.Target.ErrorCodeName()
	}
	failed := map[string]bool{}
	for _, e := range errs {
		for _, w := range run.Manifest.Workloads {
			if w.Name == e.Workload {
				failed[w.Target] = true
			}
		}
	}
	var names []string
	for _, nt := range run.Manifest.Targets {
		if name := nt.Target.ErrorCodeName(); failed[nt.Name] && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "code"
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
