// Package diagnose reads a run's timeline and says what went wrong: rules
// (one file each, registered) turn the timeline into findings with
// evidence, mechanism and remedy. It is the neutral part: the Rule
// interface, Diagnose, findings, the helpers rules share and the rules
// that hold for every kind (Neutral); each kind's own rules live in
// db/<kind>/rules and reach Diagnose through the registry of kinds.
package diagnose

// Severities of a finding, least to most severe.
const (
	Info     = "info"
	Warning  = "warning"
	Critical = "critical"
)

// Finding is what a rule concluded from a run: findings.json holds a list.
type Finding struct {
	Rule     string  `json:"rule"`
	Severity string  `json:"severity"`
	Start    float64 `json:"t0"` // the window, seconds since the run's start
	End      float64 `json:"t1"`
	Workload string  `json:"workload,omitempty"` // the workload it concerns, if one
	// Target names the target the finding is about, in a run of several
	// (timeline.Manifest.Targets); "" in a run of one.
	Target string `json:"target,omitempty"`
	// Headline is one line a person understands at 3 am.
	Headline string `json:"headline"`
	// Evidence is the series and values that prove it, with timestamps.
	Evidence []Evidence `json:"evidence"`
	// Mechanism explains why, in two or three sentences.
	Mechanism string `json:"mechanism"`
	// Remedy is concrete: the setting, the SQL, the code pattern.
	Remedy     string   `json:"remedy"`
	References []string `json:"references,omitempty"`
	// Resolved is when the incident ended for good, seconds since the
	// run's start, when the rule judged it over before the run ended (and
	// lowered the severity for it); 0 while it lasts.
	Resolved float64 `json:"resolved,omitempty"`
	// Lasting says the severity rests on evidence that cannot shrink as
	// the run goes on (deadlocks, refused connections: they happened), so
	// the live stream shows it without waiting for it to hold.
	Lasting bool `json:"-"`
}

// Evidence is one observation backing a finding.
type Evidence struct {
	// Series names where the value comes from: "source:key" for a sampled
	// series (e.g. "pg_stat_slru:MultiXactMember.hit_rate"),
	// "workload:NAME.tps" for client metrics, "event:NAME" for a mark,
	// "script:FILE:LINE" for a static check.
	Series string  `json:"series"`
	T      float64 `json:"t,omitempty"`
	Value  float64 `json:"value,omitempty"`
	Text   string  `json:"text"` // the observation in words, with its unit
}

// Findings is the content of findings.json.
type Findings struct {
	Format   string    `json:"format"` // FindingsFormat
	Findings []Finding `json:"findings"`
}

// FindingsFormat versions findings.json.
const FindingsFormat = "firedrill.findings/v1"
