package htmlpage

import (
	"slices"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/report/present"
	"github.com/firedrill/firedrill/timeline"
)

// stallRun is a 10 s run whose samplers went unanswered from 3 s (each
// read timing out after 0.8 s) until 6 s; firedrill's own sampler
// answered throughout. (A host sampler never queries a server; it stands
// in here for one whose chart every page draws.)
func stallRun() *timeline.Run {
	run := &timeline.Run{Manifest: timeline.Manifest{Name: "stall", Status: timeline.StatusCompleted, Interval: 1,
		Samplers: []timeline.SamplerInfo{{Name: "db_info"}, {Name: "host"}, {Name: "firedrill"}}}}
	for i := 0; i <= 10; i++ {
		t := float64(i)
		for _, src := range []string{"db_info", "host"} {
			s := timeline.Sample{Source: src, T: t, Values: map[string]float64{"cpus": 2, "cpu.user": 10, "cpu.system": 5, "cpu.idle": 85}, Duration: 1}
			if i >= 3 && i < 6 {
				s = timeline.Sample{Source: src, T: t, Error: "read: i/o timeout", Duration: 800, Stall: t - 3 + 0.8}
			}
			run.Samples = append(run.Samples, s)
		}
		run.Samples = append(run.Samples, timeline.Sample{Source: "firedrill", T: t, Values: map[string]float64{"cpu": 0.1, "cpus": 2}})
	}
	return run
}

func TestStallBands(t *testing.T) {
	t.Parallel()
	bands := stallBands(stallRun())
	if len(bands) != 1 {
		t.Fatalf("bands %+v, want one", bands)
	}
	b := bands[0]
	if b.Kind != stallKind || b.Start != 3 || b.End != 6 || b.Name != "server stalled 3.0 s" {
		t.Errorf("band %+v, want the stall from 3 s to 6 s, named with its length", b)
	}
	if got := stallBands(&timeline.Run{Samples: []timeline.Sample{{Source: "db_info", T: 1, Error: "refused"}}}); len(got) != 0 {
		t.Errorf("a failed read that is no stall drew %+v", got)
	}
}

// The page draws the stall once, as a band every chart shows, and no
// chart repeats it as a note about its gap.
func TestStallOnThePage(t *testing.T) {
	t.Parallel()
	p, err := buildPage(stallRun(), nil, present.Kinds{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Charts, func(c chartSpec) bool { return c.ID == "hostcpu" }) {
		t.Fatalf("no host CPU chart to hold to it")
	}
	for _, c := range p.Charts {
		for _, n := range c.Notes {
			if strings.Contains(n, "reads failed") {
				t.Errorf("chart %s repeats the stall as a gap note: %s", c.ID, n)
			}
		}
	}
	blob := string(p.Data)
	if !strings.Contains(blob, `"kind":"stall"`) || !strings.Contains(blob, "server stalled 3.0 s") {
		t.Errorf("the page's data has no stall band: %.300s", blob)
	}
}
