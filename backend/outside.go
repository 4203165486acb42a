package backend

import (
	"fmt"
	"slices"
	"strings"
)

// On a given server a run keeps to its own place (PostgreSQL's schema,
// MariaDB's database): its backend fingerprints the objects outside that
// place (name → what changes when the object does) before setup, and the
// helpers below say what changed since, at the end of setup (an error)
// and of the run (a warning). The fingerprint cannot tell this run's
// dynamic SQL from another session.

// OutsideChanges says what differs between two fingerprints of the
// objects outside a run's place: "created N", "dropped N" and "changed N
// (before → after)", sorted.
func OutsideChanges(before, after map[string]string) []string {
	var changes []string
	for name, v := range before {
		switch w, ok := after[name]; {
		case !ok:
			changes = append(changes, "dropped "+name)
		case w != v:
			changes = append(changes, "changed "+name+" ("+v+" → "+w+")")
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			changes = append(changes, "created "+name)
		}
	}
	slices.Sort(changes)
	return changes
}

// SetupChangedOutside is the end of a confined setup: it reads the
// fingerprint again (read) and returns errOutside, with the place's name
// and the changes, when anything outside the place changed since before.
func SetupChangedOutside(errOutside error, place string, before map[string]string, read func() (map[string]string, error)) error {
	after, err := read()
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if changes := OutsideChanges(before, after); len(changes) > 0 {
		return fmt.Errorf("%w %s (by dynamic SQL, or by another session meanwhile): %s", errOutside, place, strings.Join(changes, "; "))
	}
	return nil
}

// WarnChangedOutside is the end of a confined run: it reads the
// fingerprint again and warns through logf when anything outside place
// ("the schema firedrill") changed during the run.
func WarnChangedOutside(logf func(format string, args ...any), place string, before map[string]string, read func() (map[string]string, error)) {
	after, err := read()
	if err != nil {
		logf("after the run: %v", err)
		return
	}
	if changes := OutsideChanges(before, after); len(changes) > 0 {
		logf("warning: objects outside %s changed during the run (by this run or by another session): %s",
			place, strings.Join(changes, "; "))
	}
}
