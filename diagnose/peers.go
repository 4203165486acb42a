package diagnose

import (
	"sync"

	"github.com/firedrill/firedrill/timeline"
)

// Peers: in a run of several systems each target is diagnosed on its own
// view (DiagnoseTargets), and most rules need nothing else. A few must
// look across: an HTTP service's latency is explained by whether the
// database behind it grew busy with it. Within DiagnoseTargets a rule of
// one target finds the run's other targets with Peers; each peer says
// how busy its server was through its kind's ServerActivity, so the rule
// names no kind.

// ServerActivity is implemented by a kind's rule (any one in its Rules)
// that can say how busy the kind's server was, so that a rule of another
// target of the run can tell whether the time went there.
type ServerActivity interface {
	// Activity is the number of sessions active in the server at each
	// sample (executing or waiting inside it, not idle), and the series
	// that says so ("source:key"); none when the run did not record it.
	Activity(run *timeline.Run) (active []timeline.Point, series string)
	// Waits is what the active sessions waited on over [from, to): the
	// mean number of sessions per wait, the most first ("CPU" for
	// sessions running without a wait); none when the kind records no
	// waits.
	Waits(run *timeline.Run, from, to float64) []Wait
}

// Wait is one wait of a server's active sessions over a window.
type Wait struct {
	Name     string  // the kind's name for it: "IO:DataFileRead", "CPU"
	Series   string  // where it comes from
	Sessions float64 // mean sessions in it over the window
}

// Peer is another target of a run of several, as a rule diagnosing one
// target sees it.
type Peer struct {
	Name string        // the target's name in the run
	Kind string        // its kind
	Run  *timeline.Run // its view of the run (timeline.Run.ForTarget)
	// Activity is its kind's reading of how busy its server was; nil
	// when the kind offers none.
	Activity ServerActivity
}

// peers holds, while DiagnoseTargets diagnoses a target's view, the
// other targets of the run, keyed by the view.
var peers struct {
	sync.Mutex
	byView map[*timeline.Run][]Peer
}

// Peers is the other targets of the run that view belongs to, while
// DiagnoseTargets diagnoses it; none for a run of one system, or when a
// rule is called on a run directly.
func Peers(view *timeline.Run) []Peer {
	peers.Lock()
	defer peers.Unlock()
	return peers.byView[view]
}

// withPeers makes Peers(view) answer the other targets of run until the
// returned function is called.
func withPeers(run, view *timeline.Run, name string, rulesFor func(kind string) []Rule) (done func()) {
	var ps []Peer
	for _, other := range run.Manifest.TargetNames() {
		if other == name {
			continue
		}
		v := run.ForTarget(other)
		p := Peer{Name: other, Kind: v.Manifest.Target.Kind, Run: v}
		for _, r := range rulesFor(p.Kind) {
			if a, ok := r.(ServerActivity); ok {
				p.Activity = a
				break
			}
		}
		ps = append(ps, p)
	}
	peers.Lock()
	defer peers.Unlock()
	if peers.byView == nil {
		peers.byView = map[*timeline.Run][]Peer{}
	}
	peers.byView[view] = ps
	return func() {
		peers.Lock()
		defer peers.Unlock()
		delete(peers.byView, view)
	}
}
