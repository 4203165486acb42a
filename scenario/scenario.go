package scenario

import (
	"time"

	"github.com/firedrill/firedrill/script"
)

// Scenario is a decoded scenario file. After Load every defaulted field
// holds its default, so that its users need not know the defaults.
type Scenario struct {
	Name        string
	Description string
	// File is the path the scenario was read from; relative script and SQL
	// files are resolved against its directory.
	File string
	// Source is the file's text as read, kept so a run can store the
	// scenario exactly as run.
	Source []byte
	// Target and Setup are the system under test and its setup; in a
	// scenario of several systems (targets:), the first target's, each
	// target's being in Targets (ForTarget gives each one's view).
	Target Target
	Setup  Setup
	// Targets are the named systems of a scenario with several
	// (targets:), in the file's order; empty with target: (one system).
	Targets        []NamedTarget
	SampleInterval time.Duration // default 1 s, from 100 ms to 60 s
	// Duration is the run's length; default: Bounds, the latest workload
	// stop or stages' end and event end.
	Duration  time.Duration
	Workloads []Workload
	// Services are the application tiers workloads may pass through
	// (services.go, docs/services.md), in the file's order.
	Services   []Service
	Events     []Event
	Thresholds []Threshold
	// Warnings are what would not stop the scenario but the user should
	// know before running it (a script of very many commands); validate
	// and run print them.
	Warnings Errors
	// AbortOnFailure stops the run (status failed, exit 1) when its
	// transactions keep failing; default: all of them for 5 s.
	AbortOnFailure FailureLimit
	// KindKeys are the keys used whose meaning depends on the kind of
	// database (setup.pgbench, workloads.mode …), with their places, for
	// the target's backend to accept or refuse.
	KindKeys []KeyUse
	// Dialect is the language of the workloads' scripts: the dialect of
	// the target's kind of database (Options.ForKind), PostgreSQL's SQL
	// by default; with several targets, the first's (each workload's
	// scripts are in its own target's: NamedTarget.Dialect).
	Dialect script.Dialect
	// Files are the script and SQL files the scenario names, as written
	// (Resolve gives the path to open), in the order they appear: what
	// must travel with the scenario file to another machine.
	Files []FileUse
}

// FileUse is one file the scenario names, and where.
type FileUse struct {
	File string
	Pos  Pos
}

// KeyUse is one use of a key in the file.
type KeyUse struct {
	Key string // dotted, list indexes left out: "workloads.mode"
	Pos Pos
	// Value is the key's value when it is a scalar ("extended"), as
	// decoded: ${VAR} expanded, --set applied.
	Value string
	// Target names the target whose kind judges the key, in a scenario
	// of several (targets:); "" with one.
	Target string
}

// FailureLimit is when a run whose transactions keep failing is stopped:
// when, in each second of For, at least Ratio of a workload's transactions
// failed (lost or refused connections alone never stop it, nor conflicts
// a workload retries: an outage or a deadlock storm is measured). A zero For (abort_on_failure: false) never stops a run.
type FailureLimit struct {
	Pos   Pos
	Ratio float64 // 0 < Ratio ≤ 1
	For   time.Duration
}

// Defaults of AbortOnFailure.
const (
	DefaultAbortRatio = 1.0
	DefaultAbortFor   = 5 * time.Second
)

// Pos is a position in the scenario file, 1-based.
type Pos struct{ Line, Col int }

// Target is the database under test: the embedded throwaway server unless
// DSN is set.
type Target struct {
	Pos Pos
	// Kind is the kind of database (a backend's name: postgres, …); ""
	// when the scenario does not say, which is the registry's default
	// kind (Options.DefaultKind) unless the dsn's URL scheme says
	// otherwise.
	Kind     string
	KindPos  Pos
	DSN      string            // a connection string or URL; empty = embedded
	Settings map[string]string // embedded only: server settings
	// Headers, Connections and Timeout are a service's (kind http:
	// target.headers, target.connections, target.timeout; url: is its
	// DSN): headers sent with every request (values are secrets), the
	// keep-alive connections the clients share (0: one per client), and
	// each request's limit (0: the kind's default).
	Headers     map[string]string
	Connections int
	Timeout     time.Duration
	// EmbeddedName names a service of firedrill's own that its kind
	// starts when no DSN is given (kind http: target.embedded, as in
	// embedded: journal-api), and Database the earlier target it is
	// handed the connection string of (target.database). Both "" for
	// the kind's default throwaway server.
	EmbeddedName string
	EmbeddedPos  Pos
	Database     string
	DatabasePos  Pos
}

// Embedded reports whether firedrill starts the server itself.
func (t Target) Embedded() bool { return t.DSN == "" }

// Setup runs once, before any workload starts.
type Setup struct {
	Pos Pos
	// PgbenchScale, when > 0, initializes pgbench's tables at that scale.
	PgbenchScale int
	SQL          []SQLSource
	// Schema confines setup and workloads on a non-embedded target (it is
	// created and put first on search_path); default "firedrill". "public"
	// opts out.
	Schema string
	// Keys preloads keys before the load (Redis): Count string keys
	// firedrill:key:1 … firedrill:key:<Count> of Size bytes each, and the
	// Collections.
	Keys KeysSetup
}

// KeysSetup is setup.keys: how many keys of each type to preload, and how
// big.
type KeysSetup struct {
	Pos   Pos
	Count int   // string keys
	Size  int64 // bytes per string value; default 100
	// Collections are the lists, hashes, sets, sorted sets and streams
	// the file gives, in the order written.
	Collections []CollectionKeys
}

// CollectionKeys is one type's keys of setup.keys (lists: {count: 10,
// length: 1000, size: 100}): Count keys firedrill:<Type>:1 …
// firedrill:<Type>:<Count>, each of Elements elements of Size bytes.
type CollectionKeys struct {
	Pos      Pos
	Type     KeyType
	Count    int
	Elements int   // the list's length, the hash's fields, the set's members, the stream's entries
	Size     int64 // bytes per element (a hash field's or stream entry's value); default 100
}

// KeyType is a type of collection setup.keys can preload: what the file
// calls it, and what the server does.
type KeyType struct {
	Key      string // setup.keys' key: lists, hashes, sets, zsets, streams
	Name     string // the type as Redis's TYPE names it, and the keys' middle part: list, hash, set, zset, stream
	Elements string // the key giving the size of each: length, fields, members, entries
	// Distinct says the elements must differ (set and sorted-set
	// members): each is its number, zero-padded to Size bytes, so Size
	// must hold the largest number.
	Distinct bool
}

// KeyTypes are the collections setup.keys takes.
var KeyTypes = []KeyType{
	{Key: "lists", Name: "list", Elements: "length"},
	{Key: "hashes", Name: "hash", Elements: "fields"},
	{Key: "sets", Name: "set", Elements: "members", Distinct: true},
	{Key: "zsets", Name: "zset", Elements: "members", Distinct: true},
	{Key: "streams", Name: "stream", Elements: "entries"},
}

// SQLSource is SQL read from a file or given inline.
type SQLSource struct {
	Pos    Pos
	File   string // as written; Scenario.Resolve gives the path to open
	Inline string
}

// Workload is a named stream of transactions with a load shape.
type Workload struct {
	Pos  Pos
	Name string
	// Target names the target the workload loads, in a scenario of
	// several (targets:), filled by Load when it was left to default to
	// the only one; "" with target:.
	Target  string
	Scripts []ScriptSource
	// Shape: Clients (closed model) or Rate (open model), or Stages.
	// With Rate, or stages that set rates, Clients is how many clients
	// carry the rate (filled by Load: one per 100/s, at least 8). With
	// stages that set clients, Clients is the number at the start
	// (default 0).
	Clients int
	// Rate is transactions/s over all clients; with rate stages, the rate
	// at the start (default 0).
	Rate   float64
	Stages []Stage
	Start  time.Duration // offset from the run's start
	Stop   time.Duration // offset; 0 = the end of the run
	Mode   string        // one of Modes: simple (default), extended, prepared
	Seed   *uint64
	// Pool, when > 0, makes the clients share that many connections, as an
	// application pool does; PoolTimeout fails a transaction that waited
	// longer (HikariCP's connectionTimeout, default 30 s).
	Pool        int
	PoolTimeout time.Duration
	// Service names the service (Scenario.Services) the workload's
	// requests pass through; "" for none.
	Service      string
	MaxTries     int           // retries of serialization/deadlock failures; default 1 (none)
	LatencyLimit time.Duration // counts late transactions (and skips under a rate)
	Defines      map[string]string
	Scale        int // the :scale variable; default: setup's pgbench scale, or 1
	// Settings are session settings (SET name = value) on every connection,
	// e.g. statement_timeout.
	Settings map[string]string
	// Fallback, if set, is where the clients turn when a transaction
	// fails or is slow (a cache-aside read path); nil for most.
	Fallback *Fallback
}

// ScriptSource is one weighted script of a workload.
type ScriptSource struct {
	Pos  Pos
	Name string // default: the file's base name, the builtin's name, or "inline-N" (N: its place in the list, from 1)
	File string // as written; Scenario.Resolve gives the path to open
	// Builtin is tpcb-like, simple-update or select-only; the file may
	// give a prefix, as pgbench's -b, and Load stores the full name.
	Builtin string
	Inline  string
	Weight  int // default 1
}

// Stage is one step of a ramp: over Duration, move linearly to Clients or
// Rate (k6's stages).
type Stage struct {
	Pos      Pos
	Duration time.Duration
	Clients  *int
	Rate     *float64
}

// Event is something done at a moment of the run. Only what every event
// has is here; the rest is its kind's (Config).
type Event struct {
	Pos  Pos
	Name string // default: kind-N, N its place in the events list, from 1
	Kind string // one of the Options.EventKinds the scenario was loaded with
	// Target names the target the event acts on, in a scenario of
	// several (targets:); "" with target:.
	Target string
	At     time.Duration
	// Duration is how long the event lasts, as its kind decoded it (the
	// duration of hold_transaction and disk_pressure); 0 for an event that
	// takes as long as its action. It is here, not only in Config, because
	// the run's default length, the checks that events fit in the run and
	// the timeline's planned end marks need it without knowing the kind.
	Duration time.Duration
	// Config is what the kind decoded from its own keys (EventKind.Decode):
	// the event package's config type for the kind.
	Config any
}

// Threshold is a pass/fail condition on a metric of the run (issue: reports).
type Threshold struct {
	Pos Pos
	// Metric is e.g. "oltp.p99", "oltp.error_rate", "db.deadlocks",
	// "finding.deadlock", "shard2.db.rollbacks" (a target's, in a
	// scenario of several); a parameter is spelt as in the metric table
	// ("db.slru_hit_rate_min.MultiXactMember").
	Metric string
	Op     string // <, <=, >, >=, ==, !=, or OpAbsent/OpPresent for findings
	Value  float64
	Unit   string     // as written: us, µs, ms, s, %, or empty; BaseValue converts
	Text   string     // the condition as written, for messages
	Kind   MetricKind // what the metric measures, from the metric table
	// Measure reads a database metric off the run (its kind's, from the
	// table the target's kind registered); nil for the other metrics.
	Measure Measure `json:"-"`
}
