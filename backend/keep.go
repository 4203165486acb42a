package backend

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
)

// Keeper holds the throwaway servers that a command keeps across its
// runs (firedrill capacity --reuse-server), one per target: each run's
// Open takes the server the run before left instead of starting one,
// and the command stops them all with Stop when it ends, however it
// ends. The zero value is ready; a nil *Keeper keeps nothing.
type Keeper struct {
	mu   sync.Mutex
	kept map[string]*Kept
}

// For is the slot of the target called name ("" in a run of one
// system), which the runner hands its backend in Spec.Keep; nil on a
// nil Keeper.
func (k *Keeper) For(name string) *Kept {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kept == nil {
		k.kept = map[string]*Kept{}
	}
	if k.kept[name] == nil {
		k.kept[name] = &Kept{}
	}
	return k.kept[name]
}

// Stop stops every server kept, and forgets them.
func (k *Keeper) Stop() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	names := make([]string, 0, len(k.kept))
	for name := range k.kept {
		names = append(names, name)
	}
	sort.Strings(names)
	slots := make([]*Kept, len(names))
	for i, name := range names {
		slots[i] = k.kept[name]
	}
	k.mu.Unlock()
	var errs []error
	for i, slot := range slots {
		if err := slot.stopKept(); err != nil {
			if names[i] != "" {
				err = fmt.Errorf("target %s: %w", names[i], err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Kept is one target's slot in a Keeper: the server a kind's Open keeps
// there (KeptServer), and whether this run took it from the run before.
// Every method is safe on a nil *Kept, which keeps nothing.
type Kept struct {
	mu     sync.Mutex
	server any
	stop   func() error
	reused bool
}

// Reused says whether this run's server is the one the run before kept:
// its setup is done, so the runner does not run it again.
func (k *Kept) Reused() bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reused
}

// Leave says whether the target's Close leaves its server running for
// the next run (the server is kept): not when the run found it frozen,
// which is forgotten here so that Close stops it and the next run
// starts afresh.
func (k *Kept) Leave(frozen bool) bool {
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.server == nil {
		return false
	}
	if frozen {
		k.server, k.stop = nil, nil
		return false
	}
	return true
}

// stopKept stops the server kept in the slot, if any.
func (k *Kept) stopKept() error {
	k.mu.Lock()
	stop := k.stop
	k.server, k.stop, k.reused = nil, nil, false
	k.mu.Unlock()
	if stop == nil {
		return nil
	}
	return stop()
}

// KeptServer is how a kind's Open gets its throwaway server when keep
// may hold one: the server kept from the run before, readied for this
// run by ready (which restarts it when this run needs other settings,
// and fails when it is down), else a new one from start, which is then
// kept for the runs after. A kept server that ready refuses is stopped
// and replaced. With keep nil it is start alone.
func KeptServer[S any](keep *Kept, start func() (S, error), ready func(S) error, stop func(S) error) (S, error) {
	if keep == nil {
		return start()
	}
	keep.mu.Lock()
	old, ok := keep.server.(S)
	oldStop := keep.stop
	keep.mu.Unlock()
	if ok {
		err := ready(old)
		if err == nil {
			keep.mu.Lock()
			keep.reused = true
			keep.mu.Unlock()
			return old, nil
		}
		// Not fit for this run: a fresh one, as without --reuse-server.
		_ = oldStop()
	}
	s, err := start()
	keep.mu.Lock()
	defer keep.mu.Unlock()
	keep.server, keep.stop, keep.reused = nil, nil, false
	if err != nil {
		return s, err
	}
	keep.server, keep.stop = s, func() error { return stop(s) }
	return s, nil
}

// RestartSettings are the settings a kept server must be restarted with
// to serve a run that wants want, when it runs with have: those it
// lacks or has otherwise. atLeast names numeric settings that a larger
// value serves too (a connection limit), so that a run that needs fewer
// connections does not restart it.
func RestartSettings(have, want map[string]string, atLeast ...string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		h, ok := have[k]
		if ok && h == v {
			continue
		}
		if ok && slices.Contains(atLeast, k) {
			hn, herr := strconv.ParseFloat(h, 64)
			wn, werr := strconv.ParseFloat(v, 64)
			if herr == nil && werr == nil && hn >= wn {
				continue
			}
		}
		out[k] = v
	}
	return out
}
