// Package present is what a kind of target hands the report so that the
// report never names a kind: the server's name for people, its database
// charts, the series the compare page overlays as its load, and the
// counters compare weighs. Each kind's backend offers its Kind through
// Presenter; the caller that holds the registry gathers them into Kinds
// and hands them to report.
//
// It is a leaf package (timeline only) so that a kind's folder can
// declare its presentation without linking the report.
package present

import (
	"fmt"
	"maps"
	"slices"

	"github.com/firedrill/firedrill/timeline"
)

// Kind is how the report presents runs of one kind of target.
type Kind struct {
	// Product names the server for people ("PostgreSQL"), for runs that
	// did not record one (timeline.Target.Product).
	Product string
	// Charts are the run page's database charts, in order, between the
	// neutral ones (throughput and latency first, the host's and
	// firedrill's own last). A kind with none gets only the neutral
	// charts.
	Charts []Chart
	// Load is the one series the compare page overlays as the database's
	// load; nil: the compare page has none.
	Load *Load
	// Compare is what compare weighs beyond the percentiles; nil: the
	// percentiles, the findings and the settings only.
	Compare *Compare
	// Waits is where live progress lines read what the server's sessions
	// wait on; nil: the kind's progress has no wait line.
	Waits *Waits
	// InstanceSettings are the settings that say where a server lives
	// (its port, socket, data directory, log and pid files), not how it
	// behaves: two embedded servers always differ in them, so compare
	// leaves them out between embedded runs.
	InstanceSettings []string
	// ServerCPU is the series of the server's own CPU, in cores (CPU
	// seconds per second), when the kind samples it; nil: it does not.
	// capacity reads it to say whether the server's CPU or the client
	// binds.
	ServerCPU *ServerCPU
}

// ServerCPU names the series of a server's CPU in cores, and the most
// cores the server can use (0: all the host's; 1 for a server whose
// work runs on one thread).
type ServerCPU struct {
	Source, Key string
	MaxCores    float64
}

// Waits names, in one sampled source, the family of keys that count
// sessions per wait ("wait.<event>") and the key of their total, so that
// live progress can say what the server waits on most.
type Waits struct {
	Source string
	Prefix string // a family key's prefix; the rest names the wait
	Total  string // the key of all active sessions, all waits together
}

// Presenter is a kind (a backend) that says how the report presents its
// runs.
type Presenter interface {
	Presentation() Kind
}

// Kinds are the presentations of every kind firedrill has, by kind name.
// Its zero value knows no kind: every run gets the neutral charts only.
type Kinds struct {
	byKind      map[string]Kind
	defaultKind string
}

// NewKinds gathers the kinds' presentations; defaultKind is the kind of
// runs that recorded none (those before kinds existed).
func NewKinds(defaultKind string, byKind map[string]Kind) Kinds {
	return Kinds{byKind: maps.Clone(byKind), defaultKind: defaultKind}
}

// Of is the presentation of a run of target t: its kind's, the default
// kind's when the run recorded no kind; ok is false for a kind without
// one.
func (k Kinds) Of(t timeline.Target) (Kind, bool) {
	kind := t.Kind
	if kind == "" {
		kind = k.defaultKind
	}
	p, ok := k.byKind[kind]
	return p, ok
}

// Same says whether two runs are of the same kind (a run that recorded
// none is of the default kind).
func (k Kinds) Same(a, b timeline.Target) bool { return k.kindOf(a) == k.kindOf(b) }

func (k Kinds) kindOf(t timeline.Target) string {
	if t.Kind == "" {
		return k.defaultKind
	}
	return t.Kind
}

// Fill completes what a run recorded before its kind's backend filled it
// in: the server's name for people, of its target and of each of a run
// of several.
func (k Kinds) Fill(run *timeline.Run) {
	k.fill(&run.Manifest.Target)
	for i := range run.Manifest.Targets {
		k.fill(&run.Manifest.Targets[i].Target)
	}
}

func (k Kinds) fill(t *timeline.Target) {
	if t.Product != "" {
		return
	}
	if p, ok := k.Of(*t); ok {
		t.Product = p.Product
	}
}

// Waits are the wait families every kind declares, in kind order.
func (k Kinds) Waits() []Waits {
	var out []Waits
	for _, name := range k.Names() {
		if w := k.byKind[name].Waits; w != nil {
			out = append(out, *w)
		}
	}
	return out
}

// Names lists the kinds with a presentation, sorted.
func (k Kinds) Names() []string { return slices.Sorted(maps.Keys(k.byKind)) }

// KindsOf gathers the presentations of the backends that offer one
// (Presenter), by their kind; defaultKind is the kind of runs that
// recorded none.
func KindsOf[B interface{ Kind() string }](defaultKind string, backends []B) Kinds {
	byKind := map[string]Kind{}
	for _, b := range backends {
		if p, ok := any(b).(Presenter); ok {
			byKind[b.Kind()] = p.Presentation()
		}
	}
	return Kinds{byKind: byKind, defaultKind: defaultKind}
}

// MillisText writes a latency given in µs for people, as the run's
// summary tables do: "0.42 ms", "37 ms", "1.25 s".
func MillisText(us float64) string {
	v := us / 1000
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.2f ms", v)
	}
}
