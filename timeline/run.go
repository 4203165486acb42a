package timeline

import (
	"encoding/json"
	"strings"
	"time"
)

// Format is the version of the run directory format written by this code.
// Readers accept every version with the same major part ("firedrill.run/1.x").
const Format = "firedrill.run/v1"

// The files of a run directory. Everything a report, a rule or compare
// needs is in these files; nothing else is read.
const (
	ManifestFile = "run.json"          // Manifest: what ran, where, when, how it ended
	ScenarioFile = "scenario.yaml"     // the scenario as run (scripts under scripts/)
	TimelineFile = "timeline.jsonl.gz" // Records, one JSON object per line, in time order per source, gzip-compressed
	// PlainTimelineFile is the same without compression: readers accept
	// it (handy for hand-made fixtures); the writer writes TimelineFile.
	PlainTimelineFile = "timeline.jsonl"
	SummaryFile       = "summary.json"  // Summary: whole-run totals per workload, script and command
	FindingsFile      = "findings.json" // the diagnosis's findings (written by diagnose)
	ReportFile        = "report.html"   // the self-contained HTML report
	ScriptsDir        = "scripts"       // copies of the workload scripts as run
)

// Manifest describes a run: run.json.
type Manifest struct {
	Format   string    `json:"format"` // Format
	Name     string    `json:"name"`   // the scenario's name
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended,omitzero"`
	Status   string    `json:"status"`          // StatusRunning, StatusCompleted, StatusDegraded, StatusInterrupted, StatusFailed, StatusKilled
	Error    string    `json:"error,omitempty"` // why the run failed, was interrupted, degraded or killed
	Version  string    `json:"firedrill"`       // firedrill's version
	Command  []string  `json:"command,omitempty"`
	Interval float64   `json:"sample_interval_s"` // the tick: client intervals and samples
	Target   Target    `json:"target"`
	// Targets are the named systems of a run with several (the
	// scenario's targets:), in the scenario's order, Target being the
	// first's; empty in a run of one system, whose Target is it.
	Targets []NamedTarget `json:"targets,omitempty"`
	Host    Host          `json:"host"`
	// Workloads and Events as planned, in scenario order.
	Workloads []WorkloadInfo `json:"workloads"`
	Events    []EventInfo    `json:"events,omitempty"`
	// Settings is the server's configuration at the start (pg_settings:
	// name → setting with its unit, e.g. "128MB", "on").
	Settings map[string]string `json:"settings,omitempty"`
	// Samplers names every sampler that ran, with what it needed and did
	// not find ("pg_stat_statements is not installed") in Notes.
	Samplers []SamplerInfo `json:"samplers,omitempty"`
	// Process is the firedrill process that wrote the run, so that a
	// later one can tell a killed run from one still going on.
	Process *Process `json:"process,omitempty"`
	// Frozen are the windows in which the server stopped answering: no
	// transaction completed and the samplers' queries timed out.
	Frozen []FrozenWindow `json:"frozen,omitempty"`
	// Shard says the run is one shard of a split run, or their merge.
	Shard *ShardInfo `json:"shard,omitempty"`
}

// FrozenWindow is a time in which the server did not answer.
type FrozenWindow struct {
	Start float64 `json:"start_s"` // when it last answered, seconds since the run's start
	// End is when it answered again, or the run's end if it never did
	// (Recovered false).
	End       float64 `json:"end_s"`
	Recovered bool    `json:"recovered"`
}

// Run statuses.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	// StatusDegraded is a run that went to its end but whose server
	// stopped answering for a while (Manifest.Frozen): a run that could
	// not finish its duration is stopped at its deadline.
	StatusDegraded    = "degraded"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
	// StatusKilled is a run whose process ended without finishing it
	// (SIGKILL, out of memory): found "running" by a later firedrill.
	StatusKilled = "killed"
)

// Target describes the database under test.
type Target struct {
	Kind          string `json:"kind"` // the backend's kind; "" in runs from before kinds
	Embedded      bool   `json:"embedded"`
	Address       string `json:"address"` // host:port or socket directory, never a password
	Database      string `json:"database,omitempty"`
	ServerVersion string `json:"server_version"` // e.g. "15.18"
	VersionNum    int    `json:"server_version_num"`
	DataDir       string `json:"data_dir,omitempty"` // embedded only
	// ErrorCodes names the kind's error codes in its own terms, for
	// reports ("SQLSTATE" for PostgreSQL); "" in runs before it was
	// recorded, which were all PostgreSQL's.
	ErrorCodes string `json:"error_codes,omitempty"`
	// Product names the server for people ("PostgreSQL", "MariaDB");
	// "" in runs recorded before the backends filled it in.
	Product string `json:"product,omitempty"`
}

// ProductName is the server's name for people: Product, else the kind.
// A run recorded before its backend filled Product in gets it from its
// kind when it is opened for reading (present.Kinds.Fill).
func (t Target) ProductName() string {
	if t.Product != "" {
		return t.Product
	}
	return t.Kind
}

// ErrorCodeName is what the target calls its error codes.
func (t Target) ErrorCodeName() string {
	if t.ErrorCodes == "" {
		return "SQLSTATE"
	}
	return t.ErrorCodes
}

// Host describes the machine firedrill ran on.
type Host struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
	MemBytes int64  `json:"mem_bytes,omitempty"`
	Kernel   string `json:"kernel,omitempty"`
}

// WorkloadInfo is a workload as planned.
type WorkloadInfo struct {
	Name string `json:"name"`
	// Target is the name of the target the workload loads, in a run of
	// several (Manifest.Targets); "" in a run of one.
	Target  string       `json:"target,omitempty"`
	Scripts []ScriptInfo `json:"scripts"`
	Clients int          `json:"clients,omitempty"` // closed model; the largest stage target with stages
	Rate    float64      `json:"rate,omitempty"`    // open model, transactions/s; the largest stage target
	Pool    int          `json:"pool,omitempty"`    // connections shared by the clients; 0 = one each
	Start   float64      `json:"start_s"`
	Stop    float64      `json:"stop_s"`
	Mode    string       `json:"mode"` // simple, extended, prepared
	// Settings are the session settings of the workload's connections
	// (statement_timeout …), as the scenario gave them.
	Settings map[string]string `json:"settings,omitempty"`
	// Defines are the script variables the scenario sets (pgbench -D), and
	// Scale the :scale variable, for analyses of the recorded scripts
	// (variables a script reads but never sets). A run recorded before
	// they were written gets them from its scenario.yaml when opened.
	Defines map[string]string `json:"defines,omitempty"`
	Scale   int               `json:"scale,omitempty"`
	// Fallback is where the workload's clients turned when a transaction
	// failed or was slow (a cache-aside read path); nil for most.
	Fallback *FallbackInfo `json:"fallback,omitempty"`
	// Service is the service (scenario services:) the workload's
	// requests passed through; its series are the source "service".
	Service string `json:"service,omitempty"`
}

// FallbackInfo is a workload's fallback: the target its scripts ran on,
// and the latency above which a transaction fell back (0: only failures).
type FallbackInfo struct {
	Target  string       `json:"target"`
	After   float64      `json:"after_s,omitempty"`
	Scripts []ScriptInfo `json:"scripts"`
}

// ScriptInfo is one script of a workload.
type ScriptInfo struct {
	Name     string   `json:"name"`
	Weight   int      `json:"weight"`
	File     string   `json:"file,omitempty"` // under ScriptsDir
	Commands []string `json:"commands"`       // each command's text, as pgbench -r prints them
}

// EventInfo is an event as planned.
type EventInfo struct {
	Name string `json:"name"`
	// Target names the target the event acts on, in a run of several.
	Target   string  `json:"target,omitempty"`
	Kind     string  `json:"kind"`
	At       float64 `json:"at_s"`
	Duration float64 `json:"duration_s,omitempty"`
}

// SamplerInfo names a sampler and what it could not do on this server.
type SamplerInfo struct {
	Name  string `json:"name"`
	Notes string `json:"notes,omitempty"`
}

// NamedTarget is one system of a run with several: its name in the
// scenario, what Target says of a run's only one, and its own server
// settings, samplers and frozen windows (the Manifest's fields of the
// same names hold the first target's, as in a run of one system).
type NamedTarget struct {
	Name     string            `json:"name"`
	Target   Target            `json:"target"`
	Settings map[string]string `json:"settings,omitempty"`
	Samplers []SamplerInfo     `json:"samplers,omitempty"`
	Frozen   []FrozenWindow    `json:"frozen,omitempty"`
}

// Record is one line of timeline.jsonl: exactly one field is set.
type Record struct {
	Interval *Interval `json:"interval,omitempty"`
	Sample   *Sample   `json:"sample,omitempty"`
	Mark     *Mark     `json:"mark,omitempty"`
}

// Interval is what one workload's clients measured over [Start, End).
type Interval struct {
	Workload string  `json:"w"`
	Start    float64 `json:"t0"` // seconds since the run's start
	End      float64 `json:"t1"`
	Clients  int     `json:"clients"` // clients the shape wanted at the end of the interval
	Rate     float64 `json:"rate,omitempty"`
	// Transactions by outcome: every due transaction is exactly one of
	// Count (succeeded), Failed or Skipped.
	Count   int64 `json:"n"`
	Failed  int64 `json:"failed,omitempty"`
	Skipped int64 `json:"skipped,omitempty"`
	Late    int64 `json:"late,omitempty"`
	Retried int64 `json:"retried,omitempty"`
	Retries int64 `json:"retries,omitempty"`
	// Errors counts failed tries by SQLSTATE (PoolTimeoutCode for a
	// connection the pool could not give in time, "08006" and the like
	// for lost connections).
	Errors map[string]int64 `json:"errors,omitempty"`
	// Refused, Unavailable and Lost count, by the same codes, the failed
	// tries of Errors that were about the connection, as the target
	// classified them: attempts to open a session that the server
	// refused (up, but at its connection limit) or could not take (down,
	// starting, shutting down: an outage), and open sessions lost.
	// Unconnected is how many of the clients wanted had no session at the
	// interval's end, waiting to retry one (clients that own their
	// connection; not with a pool). All absent in runs recorded before
	// they were.
	Refused     map[string]int64 `json:"refused,omitempty"`
	Unavailable map[string]int64 `json:"unavailable,omitempty"`
	Lost        map[string]int64 `json:"lost,omitempty"`
	Unconnected int              `json:"unconnected,omitempty"`
	// Latency of successful transactions (µs), from the scheduled start
	// under a rate; LatencyPct is its summary for readers without HDR.
	Latency    *Histogram  `json:"lat"`
	LatencyPct Percentiles `json:"pct"`
	LagMaxUS   int64       `json:"lag_max_us,omitempty"`
	LagMeanUS  float64     `json:"lag_mean_us,omitempty"`
	// PoolWait is the time transactions waited for a pooled connection (µs).
	PoolWait    *Histogram  `json:"pool_wait,omitempty"`
	PoolWaitPct Percentiles `json:"pool_pct,omitzero"`
	// Fallbacks counts the transactions that fell back to the workload's
	// fallback target (a cache-aside read that went to the database), and
	// FallbackFailed those whose fallback failed too; absent for a
	// workload without a fallback.
	Fallbacks      int64 `json:"fallbacks,omitempty"`
	FallbackFailed int64 `json:"fallback_failed,omitempty"`
	// OldestUS is the age (µs) at the interval's end of the oldest
	// transaction still running: a stalled transaction records no
	// latency until it ends, so this is what shows a stall while it
	// lasts. Absent when none was running, and in runs recorded before.
	OldestUS int64 `json:"oldest_us,omitempty"`
}

// ConnectionFailures is how many of the interval's failed tries were
// about the connection (refused, unavailable, lost): from Refused,
// Unavailable and Lost, or in a run recorded before them (all
// PostgreSQL's), from the codes that ConnectionError names.
func (iv *Interval) ConnectionFailures() int64 {
	var n int64
	if iv.Refused == nil && iv.Unavailable == nil && iv.Lost == nil {
		for code, c := range iv.Errors {
			if ConnectionError(code) {
				n += c
			}
		}
		return n
	}
	for _, m := range []map[string]int64{iv.Refused, iv.Unavailable, iv.Lost} {
		for _, c := range m {
			n += c
		}
	}
	return n
}

// ConnectionCode reports whether the interval's failed tries of code were
// about the connection (see ConnectionFailures).
func (iv *Interval) ConnectionCode(code string) bool {
	if iv.Refused == nil && iv.Unavailable == nil && iv.Lost == nil {
		return ConnectionError(code)
	}
	return iv.Refused[code] > 0 || iv.Unavailable[code] > 0 || iv.Lost[code] > 0
}

// PoolTimeoutCode is the error code of a transaction that failed because
// the pool had no connection for it within the pool timeout.
const PoolTimeoutCode = "pool-timeout"

// ConnectionError reports whether a PostgreSQL error code says the client
// lost its connection or could not open one (SQLSTATE class 08, and the
// server shutting down or starting: 57P01–57P03): the failures of an
// outage, rather than of what a transaction did. It reads runs recorded
// before intervals classified their errors (Interval.Refused, Lost);
// newer runs carry the target's own classification.
func ConnectionError(code string) bool {
	return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
}

// MarkOutage is the kind of the marks of an outage: a period in which a
// workload's connections failed (lost, refused) and no transaction
// succeeded. Its start mark's detail has the workload, the error code and
// message that opened it; its end mark's outcome says how long it lasted
// and how many tries failed.
const MarkOutage = "outage"

// TPS is the interval's rate of successful transactions per second.
func (iv *Interval) TPS() float64 {
	if iv.End <= iv.Start {
		return 0
	}
	return float64(iv.Count) / (iv.End - iv.Start)
}

// Sample is what one sampler read at one moment. Values holds the
// numeric series (names are the sampler's, documented in its file; counters
// are turned into per-second rates or per-interval deltas by the sampler);
// Detail holds what is not a number (who holds the xmin horizon, blocking
// pairs, top statements).
type Sample struct {
	Source string `json:"s"`
	// Target is the name of the target sampled, in a run of several
	// (Manifest.Targets); "" in a run of one, and for the host's samples.
	Target   string             `json:"tg,omitempty"`
	T        float64            `json:"t"` // seconds since the run's start
	Values   map[string]float64 `json:"v,omitempty"`
	Detail   json.RawMessage    `json:"d,omitempty"`
	Error    string             `json:"err,omitempty"` // the sampler failed this tick
	Duration float64            `json:"ms,omitempty"`  // how long the read took
	// Stall is set on a read that failed because the server did not
	// answer the samplers (their queries timed out on a stalled server,
	// not an error it sent): the seconds since it last answered them, so
	// the gap is the stall's record, not a sampler's fault.
	Stall float64 `json:"stall,omitempty"`
}

// Mark is an event's moment on the timeline: its start, or its end with
// the outcome.
type Mark struct {
	T       float64        `json:"t"`
	Event   string         `json:"event"`            // the event's name
	Target  string         `json:"target,omitempty"` // the event's target, in a run of several
	Kind    string         `json:"kind"`             // hold_transaction, sql, settings …
	Phase   string         `json:"phase"`            // PhaseStart or PhaseEnd
	Outcome string         `json:"outcome,omitempty"`
	Error   string         `json:"error,omitempty"`
	Detail  map[string]any `json:"d,omitempty"` // e.g. the holder's pid and xid
}

// Mark phases.
const (
	PhaseStart = "start"
	PhaseEnd   = "end"
)

// Summary is the whole run's totals: summary.json.
type Summary struct {
	Duration  float64           `json:"duration_s"`
	Workloads []WorkloadSummary `json:"workloads"`
}

// WorkloadSummary is one workload's totals.
type WorkloadSummary struct {
	Name       string           `json:"name"`
	Duration   float64          `json:"duration_s"` // time the workload ran
	Count      int64            `json:"n"`
	Failed     int64            `json:"failed"`
	Skipped    int64            `json:"skipped"`
	Late       int64            `json:"late"`
	Retried    int64            `json:"retried"`
	Retries    int64            `json:"retries"`
	TPS        float64          `json:"tps"`
	Latency    *Histogram       `json:"lat"`
	LatencyPct Percentiles      `json:"pct"`
	PoolWait   *Histogram       `json:"pool_wait,omitempty"`
	PoolPct    Percentiles      `json:"pool_pct,omitzero"`
	Scripts    []ScriptSummary  `json:"scripts"`
	Errors     []ErrorSummary   `json:"errors,omitempty"`
	Aborted    int              `json:"aborted_clients,omitempty"`
	Extra      map[string]int64 `json:"extra,omitempty"`

	// Backoff is the time clients waited, over all of them, after
	// transactions that kept failing at once (seconds).
	Backoff float64 `json:"backoff_s,omitempty"`
	// RefusedClients is how many clients failed to open a session at
	// least once (refused, server unavailable), and ReconnectWait the
	// time clients waited, over all of them, before retrying (seconds).
	RefusedClients int     `json:"refused_clients,omitempty"`
	ReconnectWait  float64 `json:"reconnect_wait_s,omitempty"`
}

// ScriptSummary is one script's totals with its commands'.
type ScriptSummary struct {
	Name       string           `json:"name"`
	Count      int64            `json:"n"`
	Failed     int64            `json:"failed"`
	Latency    *Histogram       `json:"lat"`
	LatencyPct Percentiles      `json:"pct"`
	Commands   []CommandSummary `json:"commands"`
}

// CommandSummary is one script command's latency and failures.
type CommandSummary struct {
	Line       int         `json:"line"`
	Text       string      `json:"text"`
	Count      int64       `json:"n"`
	MeanUS     float64     `json:"mean_us"`
	LatencyPct Percentiles `json:"pct"`
	Failures   int64       `json:"failures,omitempty"`
	Retries    int64       `json:"retries,omitempty"`
}

// ErrorSummary counts one kind of error of a workload.
type ErrorSummary struct {
	Code    string  `json:"code"` // SQLSTATE or PoolTimeoutCode
	Message string  `json:"message"`
	Detail  string  `json:"detail,omitempty"` // e.g. the deadlock's processes and relations
	Count   int64   `json:"count"`
	First   float64 `json:"first_s"` // seconds since the run's start
	Last    float64 `json:"last_s"`
	// Where the first occurrence failed: the script's name and the line
	// of the command in it (0: not in a script command, e.g. connecting).
	Script string `json:"script,omitempty"`
	Line   int    `json:"line,omitempty"`
}

// MarshalJSON writes percentiles in milliseconds under short names, the
// unit people read; the µs fields stay the in-memory truth.
func (p Percentiles) MarshalJSON() ([]byte, error) {
	return json.Marshal(percentilesJSON{
		P50: usToMS(p.P50), P90: usToMS(p.P90), P95: usToMS(p.P95),
		P99: usToMS(p.P99), P999: usToMS(p.P999), Max: usToMS(p.Max),
	})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (p *Percentiles) UnmarshalJSON(data []byte) error {
	var j percentilesJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*p = Percentiles{P50: msToUS(j.P50), P90: msToUS(j.P90), P95: msToUS(j.P95),
		P99: msToUS(j.P99), P999: msToUS(j.P999), Max: msToUS(j.Max)}
	return nil
}

type percentilesJSON struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

func usToMS(us int64) float64 { return float64(us) / 1000 }
func msToUS(ms float64) int64 { return int64(ms*1000 + 0.5) }
