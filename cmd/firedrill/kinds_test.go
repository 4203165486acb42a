package main

import (
	"slices"
	"testing"

	"github.com/firedrill/firedrill/backend/all"
)

// The tests' registry (backend/all) holds the same kinds as the binary's:
// a kind registered here but not there would go untested by every
// conformance test that loops over the registry.
func TestTestsRegisterTheBinarysKinds(t *testing.T) {
	t.Parallel()
	if got, want := all.Registry().Kinds(), kinds().Kinds(); !slices.Equal(got, want) {
		t.Errorf("backend/all registers %v, cmd/firedrill %v: add the kind to both", got, want)
	}
}
