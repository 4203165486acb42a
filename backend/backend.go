// Package backend is the seam between firedrill's database-neutral layers
// (runner, diagnose, report, drills, the command line) and each kind of
// database. A kind (postgres, mariadb, redis) is one Backend value in its
// own folder, db/<kind>, registered by one line in kinds/kinds.go: it starts
// a throwaway server or opens a given one, makes the engine's targets, runs
// setup, and offers what else it can as small optional interfaces found by
// type assertion (Sampled, Configured, Eventful, Evidenced, EventKinds,
// Restorer, Commander, Ruled).
package backend

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/internal/clikit"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
	servicerules "github.com/firedrill/firedrill/service/rules"
	"github.com/firedrill/firedrill/timeline"
)

// Backend is one kind of database.
type Backend interface {
	// Kind is the name scenarios use (target: {kind: postgres}).
	Kind() string
	// Open brings up the target of one run: a throwaway server of its own
	// when spec.DSN is empty, else the given server. Close releases it.
	Open(ctx context.Context, spec Spec) (Target, error)
}

// Spec is what a backend needs to open a run's target.
type Spec struct {
	Scenario *scenario.Scenario
	// DSN is the given server (--dsn or target.dsn); "" starts a
	// throwaway server.
	DSN string
	// Log receives progress lines (server start, setup); may be nil.
	Log io.Writer
	// Redact masks passwords in what the backend writes (run.json's
	// address, settings).
	Redact func(string) string
	// Secret teaches the masking a password the backend made itself and
	// that no connection string the user gave holds (an embedded server's
	// own, which shell events receive); may be nil.
	Secret func(password string)
	// AllowOutsideSchema lifts the confinement of a given server: setup,
	// workloads and user-written SQL or commands then run as the DSN's own
	// account, as firedrill did before it confined by privileges.
	AllowOutsideSchema bool
	// RunAs is a confined account made beforehand (--run-as URL, for an
	// admin DSN that cannot make one): on a given server, setup, workloads
	// and user-written SQL or commands run as it rather than as an account
	// the run makes and removes; "" lets the run make its own.
	RunAs string
	// PrivilegesOnly skips the lexical confinement check (Preflight's and
	// the target's own) so that a given server's privileges alone must
	// hold: for the tests that prove they do; no flag sets it.
	PrivilegesOnly bool
	// Connections is the most sessions the workloads may open at once
	// (an embedded server is sized for them).
	Connections int
	// Keep, when set, keeps the throwaway server for the runs after this
	// one (firedrill capacity --reuse-server): Open takes the server kept
	// there (KeptServer), readied for this run, instead of starting one,
	// and Close leaves it running (Kept.Leave). Nil: a server per run.
	// A given server ignores it.
	Keep *Kept
	// Peer describes another target of the run, opened before this one
	// (scenario.Target.Database: the database an embedded service of the
	// http kind is put in front of); a run of one system has none, and
	// Preflight's Spec no Peer.
	Peer func(name string) (Peer, error)
}

// Peer is what a target's backend may know of another target of its run.
type Peer struct {
	Kind string
	// ConnString is what the peer's events are given (event.Env's
	// ConnString, a shell event's FIREDRILL_CONNSTRING): its backend's
	// form, for the account user-written commands run as. A secret.
	ConnString string
}

// Target is a run's database, opened by a backend.
type Target interface {
	// Info describes the target for run.json (never a password). It
	// knows more once samplers have started (the server's version).
	Info() timeline.Target
	// Setup runs the scenario's setup once, before any load.
	Setup(ctx context.Context) error
	// Workload makes the engine's target for one workload's clients.
	// appName tags its sessions where the database has such a tag.
	Workload(spec *scenario.Workload, scripts []*script.Script, appName string) (Workload, error)
	// Close stops a throwaway server and removes it (unless Spec.Keep
	// keeps it for the next run); on a given server it puts back what the
	// run changed. frozen says the run found the server
	// not answering: it gets one short try rather than a wait.
	Close(frozen bool) error
}

// Workload is the engine's target for one workload, with how it talks.
type Workload struct {
	Target engine.Target
	Mode   string // the protocol, for run.json ("simple", "prepared" …)
	// Pool, when > 0 and the workload sets no pool of its own, makes the
	// clients share that many connections: the target's own setting (an
	// HTTP service's connections:).
	Pool int
}

// Sampled is a target whose insides can be read on the run's clock.
type Sampled interface {
	// Samplers connects the target's samplers; each query is bounded by
	// timeout. The caller closes Sampling.Close when the run ends.
	Samplers(ctx context.Context, timeout time.Duration) (*Sampling, error)
}

// Sampling is a target's samplers for one run.
type Sampling struct {
	Sources []Source
	// Notes say, per sampler name, what could not be read on this server
	// (also for samplers left out for it).
	Notes map[string]string
	Close func() error
	// Unanswered says whether a sampler's error is the server not
	// answering in time (a timeout), rather than an answer, if an error;
	// nil judges by the context's deadline and the error's words alone.
	Unanswered func(err error) bool
}

// Source is one sampler with its cadence; sampler.Schedule gives a
// kind's samplers theirs.
type Source = sampler.Source

// Configured is a target whose configuration can be snapshot.
type Configured interface {
	// Settings reads the server's configuration: name → value with unit.
	Settings(ctx context.Context) (map[string]string, error)
	// SettingsSource is the timeline source of a snapshot taken after
	// an event changed settings.
	SettingsSource() string
}

// Eventful is a target that scenario events can act on.
type Eventful interface {
	// EventEnv is what events may touch on this target.
	EventEnv(allowShell bool, appName func(workload string) string) *event.Env
}

// EventKinds is a backend with kinds of event of its own (PostgreSQL's
// hold_transaction, sql, settings, terminate, in db/postgres/pgevent),
// which its targets have beside the neutral kinds of package event.
type EventKinds interface {
	EventKinds() []event.Kind
}

// EventKindsOf lists the kinds of event a backend's targets can have: its
// own, then the neutral ones.
func EventKindsOf(b Backend) []event.Kind {
	var out []event.Kind
	if ek, ok := b.(EventKinds); ok {
		out = append(out, ek.EventKinds()...)
	}
	return append(out, event.Kinds()...)
}

// SetupMarker is a target that can leave a mark on the server, for a run
// split over several processes (shards): shard 0 marks that the setup of
// the run named key is done, and the others wait until they see it.
type SetupMarker interface {
	MarkSetupDone(ctx context.Context, key string) error
	SetupDone(ctx context.Context, key string) (bool, error)
}

// Setupless is a target with no setup at all (an HTTP service is loaded
// as it is): the shards of a split run have nothing to wait for, so it
// needs no SetupMarker.
type Setupless interface {
	Setupless() bool
}

// Restorer is a backend that can put back what runs changed on a given
// server and could not restore themselves (a run killed outright): for
// PostgreSQL, the settings that settings events changed.
type Restorer interface {
	// Restore puts back what runs recorded in schema on the server at
	// dsn, writing a line per thing restored (or left alone, and why) to
	// w, or one line saying there was nothing to restore.
	Restore(ctx context.Context, dsn, schema string, w io.Writer) error
}

// Granter is a backend that confines a given server by the server's own
// privileges: setup, workloads and user-written SQL or commands run as an
// account that can touch only firedrill's namespace (schema, database or
// key prefix), made by the admin DSN for the run and removed after it.
type Granter interface {
	// Grant is what an administrator runs to make such an account by hand
	// for the server at dsn and firedrill's namespace schema (SQL, or
	// Redis ACL commands), with PASSWORD where the password goes; the
	// account is then given to runs with --run-as. It does not connect.
	Grant(dsn, schema string) (string, error)
}

// Evidenced is a target that collects evidence at the end of a run (for
// PostgreSQL: the plans of the top statements), after the load and before
// the server stops.
type Evidenced interface {
	Evidence(ctx context.Context) ([]timeline.Sample, error)
}

// Preflighter is a backend that checks a scenario before anything runs
// (run and validate): what the server would refuse, or what the backend
// refuses to do on a given server.
type Preflighter interface {
	Preflight(spec Spec) error
}

// Schemed is a backend whose given servers are named by URL schemes
// ("postgres://"); a DSN without a scheme goes to the scenario's kind.
type Schemed interface {
	Schemes() []string
}

// Keyed is a backend that says which kind-specific scenario keys it
// takes (scenario.KindKeys); a scenario using another is refused with the
// key's position.
type Keyed interface {
	Keys() []string
}

// Commander is a backend with commands of its own on firedrill's command
// line (PostgreSQL: pgbench); the command line adds them beside its own.
type Commander interface {
	Commands(env *clikit.Env) []*cobra.Command
}

// Dialected is a backend whose workloads' scripts are read in a dialect
// of its own (db/<kind>/*dialect), rather than pgbench's.
type Dialected interface {
	Dialect() script.Dialect
}

// DialectOf is b's script dialect: its own, else the zero Dialect,
// pgbench's.
func DialectOf(b Backend) script.Dialect {
	if d, ok := b.(Dialected); ok {
		return d.Dialect()
	}
	return script.Dialect{}
}

// Thresholded is a backend whose database metrics a scenario's thresholds
// may name ("db.deadlocks", "<target>.db.deadlocks"), each with how to
// measure it on a run (scenario.MetricSpec.Measure): the scenario and
// report packages read no kind's metric names themselves.
type Thresholded interface {
	DBMetrics() []scenario.MetricSpec
}

// DBMetricsOf are b's database metrics for thresholds; none when it has
// no such metrics.
func DBMetricsOf(b Backend) []scenario.MetricSpec {
	if t, ok := b.(Thresholded); ok {
		return t.DBMetrics()
	}
	return nil
}

// Ruled is a backend with diagnosis rules of its own (db/<kind>/rules):
// they run on its runs only, beside diagnose's neutral rules. Several
// kinds may each have a rule of one id (commit-bound): each is that
// kind's variant of it.
type Ruled interface {
	Rules() []diagnose.Rule
}

// Passworder is a backend whose driver may send a password that is not
// written in the connection string (a passfile, a service file, its
// environment), so that firedrill can mask it in everything it writes.
type Passworder interface {
	// Password is what the driver would send for connString ("" is the
	// default connection); "" when none or unknown.
	Password(connString string) string
}

// Secreted is a backend whose scenarios give its targets secrets that no
// connection string holds (an HTTP service's Authorization header, a
// token in a script's URL), so that they are masked in everything the
// run prints and writes, from its first byte.
type Secreted interface {
	// Secrets are the secret values sc gives a target of the kind (one
	// target's view).
	Secrets(sc *scenario.Scenario) []string
}

// Registry holds the backends firedrill was built with. The registration
// (package kinds) builds it with NewRegistry, cmd/firedrill hands it
// down, and tests take it from there too.
type Registry struct {
	byKind map[string]Backend
	// defaultKind is the first backend registered: the kind of a
	// scenario that names none and of a DSN without a URL scheme.
	defaultKind string
}

// NewRegistry registers backends, the first being the default kind (a
// scenario naming no kind and no DSN runs on it, and so does a key=value
// DSN, which has no URL scheme); a kind registered twice panics, as that
// is a programming error, and so does a backend offering a kind of event
// twice (its own, or one of event's neutral kinds). Two backends may each
// have a kind of the same name (sql): a scenario's events are decoded with
// the kinds of its target's backend.
func NewRegistry(backends ...Backend) *Registry {
	r := &Registry{byKind: map[string]Backend{}}
	if len(backends) > 0 {
		r.defaultKind = backends[0].Kind()
	}
	for _, b := range backends {
		if _, dup := r.byKind[b.Kind()]; dup {
			panic("backend: kind registered twice: " + b.Kind())
		}
		r.byKind[b.Kind()] = b
		seen := map[string]bool{}
		for _, k := range EventKindsOf(b) {
			if seen[k.Name] {
				panic("backend: " + b.Kind() + " offers the event kind " + k.Name + " twice")
			}
			seen[k.Name] = true
		}
	}
	return r
}

// Default is the default kind: the first registered (see NewRegistry).
func (r *Registry) Default() string { return r.defaultKind }

// EventKinds lists every kind of event firedrill has: each backend's own
// in kind order, then the neutral ones (the order messages list them). A
// name two backends share is listed once, the first backend's.
func (r *Registry) EventKinds() []event.Kind {
	var out []event.Kind
	seen := map[string]bool{}
	for _, b := range r.Backends() {
		if ek, ok := b.(EventKinds); ok {
			for _, k := range ek.EventKinds() {
				if !seen[k.Name] {
					seen[k.Name] = true
					out = append(out, k)
				}
			}
		}
	}
	return append(out, event.Kinds()...)
}

// ScenarioOptions are the options to load scenarios with: a scenario's
// events decode with the kinds of its target's backend (target.kind, else
// its target.dsn's URL scheme, else the default kind) and its scripts with that
// backend's dialect. A scenario of an unknown kind decodes with every
// kind firedrill has, and Resolve then refuses the kind.
func (r *Registry) ScenarioOptions() scenario.Options {
	opts := event.ScenarioOptions(r.EventKinds())
	opts.DefaultKind = r.defaultKind
	opts.ForKind = func(kind string) (scenario.KindOptions, bool) {
		b, ok := r.byKind[kind]
		if !ok {
			return scenario.KindOptions{}, false
		}
		return scenario.KindOptions{
			EventKinds: event.ScenarioOptions(EventKindsOf(b)).EventKinds,
			Dialect:    DialectOf(b),
			DBMetrics:  DBMetricsOf(b),
		}, true
	}
	opts.KindOfDSN = func(dsn string) (string, bool) {
		scheme, ok := urlScheme(dsn)
		if !ok {
			return "", false
		}
		kind := r.kindOfScheme(scheme)
		return kind, kind != ""
	}
	return opts
}

// ScenarioOptionsFor are ScenarioOptions for a run given a server (--dsn;
// "" for none): a scenario naming no kind takes the kind of the DSN's URL
// scheme.
func (r *Registry) ScenarioOptionsFor(dsn string) scenario.Options {
	opts := r.ScenarioOptions()
	if dsn != "" {
		opts.Kind, _ = opts.KindOfDSN(dsn)
	}
	return opts
}

// CheckEventKinds refuses, at each one's position, the events of sc whose
// kind b's targets cannot have (a kind of another backend).
func CheckEventKinds(b Backend, sc *scenario.Scenario) error {
	names := event.KindNames(EventKindsOf(b))
	var errs scenario.Errors
	for _, ev := range sc.Events {
		if !slices.Contains(names, ev.Kind) {
			errs = append(errs, &scenario.Error{File: sc.File, Pos: ev.Pos,
				Msg:  fmt.Sprintf("%s events make no sense for a %s target", ev.Kind, b.Kind()),
				Hint: "a " + b.Kind() + " target takes events of kind " + strings.Join(names, ", ")})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// ForDSN finds the backend of a given server by its DSN's URL scheme; a
// DSN without one (a key=value connection string) is the default kind's.
func (r *Registry) ForDSN(dsn string) (Backend, error) {
	kind := r.defaultKind
	if scheme, ok := urlScheme(dsn); ok {
		kind = r.kindOfScheme(scheme)
		if kind == "" {
			return nil, fmt.Errorf("no backend takes %s:// URLs (known: %s)", scheme, strings.Join(r.schemes(), ", "))
		}
	}
	b, ok := r.byKind[kind]
	if !ok {
		return nil, fmt.Errorf("no backend of kind %s is built (built: %s)", kind, strings.Join(r.Kinds(), ", "))
	}
	return b, nil
}

// Rules are the rules to diagnose a run of kind with: that kind's own (a
// run from before kinds, "", is the default kind's), diagnose's neutral
// rules and the service tier's (servicerules). An unknown kind gets the
// neutral and service ones.
func (r *Registry) Rules(kind string) []diagnose.Rule {
	if kind == "" {
		kind = r.defaultKind
	}
	var out []diagnose.Rule
	if ru, ok := r.byKind[kind].(Ruled); ok {
		out = append(out, ru.Rules()...)
	}
	return append(append(out, diagnose.Neutral()...), servicerules.Rules()...)
}

// AllRules lists every rule of every kind, then the neutral and service
// ones: what a
// threshold or a drill's expectation may name. An id several kinds have
// appears once per kind.
func (r *Registry) AllRules() []diagnose.Rule {
	var out []diagnose.Rule
	for _, b := range r.Backends() {
		if ru, ok := b.(Ruled); ok {
			out = append(out, ru.Rules()...)
		}
	}
	return append(append(out, diagnose.Neutral()...), servicerules.Rules()...)
}

// Kinds lists the registered kinds, sorted.
func (r *Registry) Kinds() []string { return slices.Sorted(maps.Keys(r.byKind)) }

// Backends lists the registered backends in kind order.
func (r *Registry) Backends() []Backend {
	out := make([]Backend, 0, len(r.byKind))
	for _, k := range r.Kinds() {
		out = append(out, r.byKind[k])
	}
	return out
}

// Lookup finds a kind's backend.
func (r *Registry) Lookup(kind string) (Backend, bool) {
	b, ok := r.byKind[kind]
	return b, ok
}

// Resolve picks the backend of a run: the --dsn's URL scheme when it has
// one, else the scenario's target kind (else the default kind); a DSN whose
// scheme disagrees with the scenario's kind is an error, with the kind's
// position. Kind-specific keys the backend does not take are errors too.
func (r *Registry) Resolve(sc *scenario.Scenario, dsn string) (Backend, error) {
	kind := sc.Target.Kind
	if kind == "" {
		kind = r.defaultKind
	}
	if dsn == "" {
		dsn = sc.Target.DSN
	}
	if scheme, ok := urlScheme(dsn); ok {
		byScheme := r.kindOfScheme(scheme)
		if byScheme == "" {
			return nil, fmt.Errorf("%s: no backend takes %s:// URLs (known: %s)", dsnPlace(sc), scheme, strings.Join(r.schemes(), ", "))
		}
		if sc.Target.Kind != "" && sc.Target.Kind != byScheme {
			return nil, &scenario.Error{File: sc.File, Pos: sc.Target.KindPos,
				Msg:  fmt.Sprintf("target kind %s, but the dsn is a %s:// URL (a %s server)", sc.Target.Kind, scheme, byScheme),
				Hint: "make the kind and the dsn agree"}
		}
		kind = byScheme
	}
	b, ok := r.byKind[kind]
	if !ok {
		msg := fmt.Sprintf("target kind %s is not known (known: %s)", kind, strings.Join(r.Kinds(), ", "))
		return nil, &scenario.Error{File: sc.File, Pos: sc.Target.KindPos, Msg: msg}
	}
	if err := checkKeys(b, sc); err != nil {
		return nil, err
	}
	return b, nil
}

// checkKeys refuses kind-specific keys the backend does not take.
func checkKeys(b Backend, sc *scenario.Scenario) error {
	keyed, ok := b.(Keyed)
	if !ok {
		return nil
	}
	takes := keyed.Keys()
	var errs scenario.Errors
	for _, use := range sc.KindKeys {
		if !slices.Contains(takes, use.Key) {
			errs = append(errs, &scenario.Error{File: sc.File, Pos: use.Pos,
				Msg:  fmt.Sprintf("%s makes no sense for a %s target", use.Key, b.Kind()),
				Hint: "a " + b.Kind() + " target takes " + strings.Join(takes, ", ")})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func (r *Registry) kindOfScheme(scheme string) string {
	for _, b := range r.Backends() {
		if s, ok := b.(Schemed); ok && slices.Contains(s.Schemes(), scheme) {
			return b.Kind()
		}
	}
	return ""
}

func (r *Registry) schemes() []string {
	var out []string
	for _, b := range r.Backends() {
		if s, ok := b.(Schemed); ok {
			for _, scheme := range s.Schemes() {
				out = append(out, scheme+"://")
			}
		}
	}
	return out
}

// urlScheme is a DSN's URL scheme, lowercased: what comes before "://".
func urlScheme(dsn string) (string, bool) {
	i := strings.Index(dsn, "://")
	if i <= 0 {
		return "", false
	}
	scheme := strings.ToLower(dsn[:i])
	for _, c := range scheme {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return "", false
		}
	}
	return scheme, true
}

func dsnPlace(sc *scenario.Scenario) string {
	if sc.Target.DSN != "" && sc.Target.Pos.Line > 0 {
		return fmt.Sprintf("%s:%d:%d", sc.File, sc.Target.Pos.Line, sc.Target.Pos.Col)
	}
	return "--dsn"
}
