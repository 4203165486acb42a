package runner

import (
	"slices"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

// shareHost takes the sources of the machine and of firedrill itself
// (hostmetric.Sources) out of each target's samplers in a run of several,
// so that they are read once per tick rather than once per target: the
// first target's (whose data directory's disk "host" reads), recorded
// with no target, which every target's view of the run shares
// (timeline.Run.ForTarget). A run of one system keeps them with its
// target, as it always has.
func (r *run) shareHost() {
	if !r.several() {
		return
	}
	host := &targetRun{sampling: &backend.Sampling{Notes: map[string]string{}}}
	for _, tr := range r.targets {
		var kept []backend.Source
		for _, s := range tr.samplers {
			name := s.Name()
			if !slices.Contains(hostmetric.Sources, name) {
				kept = append(kept, s)
				continue
			}
			if tr.sampling != nil {
				delete(tr.sampling.Notes, name)
			}
			if slices.ContainsFunc(host.samplers, func(h backend.Source) bool { return h.Name() == name }) {
				continue // another target's reading of the same machine
			}
			host.samplers = append(host.samplers, s)
			if n, ok := s.Sampler.(sampler.Noter); ok && n.Note() != "" {
				host.sampling.Notes[name] = n.Note()
			}
		}
		tr.samplers = kept
	}
	if len(host.samplers) > 0 {
		r.host = host
	}
}
