package engine

import (
	"testing"

	"github.com/firedrill/firedrill/script"
)

// TestThreadChooserPicksAsPgbench: a thread's chooser draws
// getrand(0, total-1) from its pg_prng, without allocating.
func TestThreadChooserPicksAsPgbench(t *testing.T) {
	var c threadChooser
	c.rng.Seed(7)
	ref := script.NewRand(7)
	for range 1000 {
		if got, want := c.pick(13), int(ref.Uniform(0, 12)); got != want {
			t.Fatalf("pick = %d, pg_prng gives %d", got, want)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { c.pick(13) }); n != 0 {
		t.Errorf("pick allocates %v times", n)
	}
}
