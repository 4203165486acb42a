package present

import (
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

type fakeKind struct {
	name string
	p    *Kind
}

func (f fakeKind) Kind() string { return f.name }

type presented struct{ fakeKind }

func (p presented) Presentation() Kind { return *p.p }

// KindsOf keeps the backends that present themselves; a run of no kind is
// the default kind's, and Fill names an old run's server after its kind.
func TestKindsOf(t *testing.T) {
	t.Parallel()
	type kind = interface{ Kind() string }
	kinds := KindsOf("kv", []kind{
		presented{fakeKind{"kv", &Kind{Product: "KV Store", Charts: []Chart{{ID: "kv-ops"}}}}},
		fakeKind{name: "plain"},
	})
	if got := kinds.Names(); len(got) != 1 || got[0] != "kv" {
		t.Errorf("Names() = %v, want [kv]", got)
	}
	if p, ok := kinds.Of(timeline.Target{}); !ok || p.Product != "KV Store" {
		t.Errorf("a run of no kind: %+v, %v; want the default kind's", p, ok)
	}
	if _, ok := kinds.Of(timeline.Target{Kind: "plain"}); ok {
		t.Error("a kind without a presentation has one")
	}
	if !kinds.Same(timeline.Target{}, timeline.Target{Kind: "kv"}) || kinds.Same(timeline.Target{Kind: "plain"}, timeline.Target{Kind: "kv"}) {
		t.Error("Same: a run of no kind is the default kind's, and only that")
	}
	for _, tt := range []struct {
		target timeline.Target
		want   string
	}{
		{timeline.Target{}, "KV Store"},
		{timeline.Target{Kind: "kv", Product: "KV 2"}, "KV 2"}, // recorded: kept
		{timeline.Target{Kind: "plain"}, "plain"},              // no presentation: its kind
	} {
		run := &timeline.Run{Manifest: timeline.Manifest{Target: tt.target}}
		kinds.Fill(run)
		if got := run.Manifest.Target.ProductName(); got != tt.want {
			t.Errorf("Fill(%+v): product %q, want %q", tt.target, got, tt.want)
		}
	}
}
