package redis

import (
	"slices"
	"testing"
	"time"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/redis/redismetric"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

// The embedded target offers Redis's samplers (server sources, once a
// second) and the host's, and they read.
func TestSamplers(t *testing.T) {
	t.Parallel()
	sc := parse(t, "target: {kind: redis, settings: {appendonly: \"yes\"}}\n")
	tg, err := New().Open(t.Context(), backend.Spec{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(false)
	sampling, err := tg.(backend.Sampled).Samplers(t.Context(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer sampling.Close()
	var names []string
	for _, s := range sampling.Sources {
		names = append(names, s.Name())
		server := slices.Contains(redismetric.Sources, s.Name())
		if s.Server != server {
			t.Errorf("%s: Server %v", s.Name(), s.Server)
		}
		if server && s.EveryTick {
			t.Errorf("%s is read every tick; Redis's sources are counters, read once a second", s.Name())
		}
		if _, _, err := s.Sample(t.Context()); err != nil {
			t.Errorf("%s: %v", s.Name(), err)
		}
	}
	for _, want := range []string{redismetric.Info, redismetric.Latency, redismetric.Slowlog, redismetric.CommandStats, hostmetric.Host} {
		if !slices.Contains(names, want) {
			t.Errorf("no sampler %s among %v", want, names)
		}
	}
	if sampling.Unanswered == nil {
		t.Error("no Unanswered for the frozen-server watch")
	}
}
