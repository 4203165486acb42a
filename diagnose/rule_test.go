package diagnose

import (
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// stubRule finds what check says, reading nothing sampled unless needs.
type stubRule struct {
	id    string
	needs []string
	check func(run *timeline.Run) []Finding
}

func (r stubRule) ID() string                        { return r.id }
func (r stubRule) Inputs() Inputs                    { return Inputs{AnyOf: r.needs} }
func (r stubRule) Check(run *timeline.Run) []Finding { return r.check(run) }

var _ Rule = stubRule{}

// Diagnose runs the rules it is handed whose sources the run recorded,
// names their findings and sorts them; the order of the rules breaks ties.
func TestDiagnoseRunsTheRulesItIsGiven(t *testing.T) {
	t.Parallel()
	run := &timeline.Run{}
	find := func(sev string) func(*timeline.Run) []Finding {
		return func(*timeline.Run) []Finding { return []Finding{{Severity: sev}} }
	}
	got := Diagnose(run, []Rule{
		stubRule{id: "info-first", check: find(Info)},
		stubRule{id: "unrecorded", needs: []string{"nowhere"}, check: find(Critical)},
		stubRule{id: "critical", check: find(Critical)},
		stubRule{id: "info-second", check: find(Info)},
	})
	var ids []string
	for _, f := range got {
		ids = append(ids, f.Rule)
	}
	if want := []string{"critical", "info-first", "info-second"}; len(ids) != len(want) || ids[0] != want[0] || ids[1] != want[1] || ids[2] != want[2] {
		t.Errorf("findings of %v, want %v", ids, want)
	}
	if !Known([]Rule{stubRule{id: "a"}}, "a") || Known(nil, "a") {
		t.Error("Known does not look in the rules it is given")
	}
}

// Shared computes once within a Diagnose pass, and anew outside one.
func TestSharedLastsOneDiagnose(t *testing.T) {
	t.Parallel()
	run := &timeline.Run{}
	type key struct{}
	calls := 0
	compute := func() int { calls++; return calls }
	Diagnose(run, []Rule{stubRule{id: "twice", check: func(run *timeline.Run) []Finding {
		if a, b := Shared(run, key{}, compute), Shared(run, key{}, compute); a != b {
			t.Errorf("within one pass: %d then %d", a, b)
		}
		return nil
	}}})
	if calls != 1 {
		t.Errorf("computed %d times in one pass, want once", calls)
	}
	if Shared(run, key{}, compute); calls != 2 {
		t.Error("the pass's answer outlived it")
	}
}

// DiagnoseTargets runs each target's kind's rules on that target's view
// and names the target; a run of one system gets its kind's rules.
func TestDiagnoseTargets(t *testing.T) {
	t.Parallel()
	sees := func(source string) func(*timeline.Run) []Finding {
		return func(run *timeline.Run) []Finding {
			for _, s := range run.Samples {
				if s.Source != source {
					t.Errorf("a rule of %s's kind saw the sample %s", source, s.Source)
				}
			}
			return []Finding{{Severity: Warning, Headline: run.Manifest.Target.Address}}
		}
	}
	rules := map[string][]Rule{
		"a-kind": {stubRule{id: "a-rule", needs: []string{"a-source"}, check: sees("a-source")}},
		"b-kind": {stubRule{id: "b-rule", needs: []string{"b-source"}, check: sees("b-source")}},
	}
	run := &timeline.Run{
		Manifest: timeline.Manifest{Target: timeline.Target{Kind: "a-kind"}, Targets: []timeline.NamedTarget{
			{Name: "db", Target: timeline.Target{Kind: "a-kind", Address: "db:1"}},
			{Name: "cache", Target: timeline.Target{Kind: "b-kind", Address: "cache:2"}},
		}},
		Samples: []timeline.Sample{{Source: "a-source", Target: "db"}, {Source: "b-source", Target: "cache"}},
	}
	got := DiagnoseTargets(run, func(kind string) []Rule { return rules[kind] })
	if len(got) != 2 || got[0].Rule != "a-rule" || got[0].Target != "db" || got[0].Headline != "db:1" ||
		got[1].Rule != "b-rule" || got[1].Target != "cache" || got[1].Headline != "cache:2" {
		t.Errorf("findings %+v", got)
	}
	one := &timeline.Run{Manifest: timeline.Manifest{Target: timeline.Target{Kind: "b-kind"}}, Samples: []timeline.Sample{{Source: "b-source"}}}
	if got := DiagnoseTargets(one, func(kind string) []Rule { return rules[kind] }); len(got) != 1 || got[0].Rule != "b-rule" || got[0].Target != "" {
		t.Errorf("a run of one system: %+v", got)
	}
}

// wideStub is a run-wide rule: it reads a source of no target.
type wideStub struct{ stubRule }

func (wideStub) RunWide() {}

// A run-wide rule that every kind has runs once, on the whole run,
// and names no target unless it says so itself.
func TestDiagnoseTargetsRunWide(t *testing.T) {
	t.Parallel()
	calls := 0
	wide := wideStub{stubRule{id: "wide-rule", needs: []string{"service"}, check: func(run *timeline.Run) []Finding {
		calls++
		if len(run.Manifest.Targets) != 2 {
			t.Errorf("the run-wide rule saw a target's view: %d targets", len(run.Manifest.Targets))
		}
		return []Finding{{Severity: Warning}}
	}}}
	rules := func(string) []Rule { return []Rule{wide} }
	run := &timeline.Run{
		Manifest: timeline.Manifest{Targets: []timeline.NamedTarget{{Name: "a"}, {Name: "b"}}},
		Samples:  []timeline.Sample{{Source: "service"}},
	}
	got := DiagnoseTargets(run, rules)
	if calls != 1 || len(got) != 1 || got[0].Rule != "wide-rule" || got[0].Target != "" {
		t.Errorf("%d calls, findings %+v; want one call, one finding of no target", calls, got)
	}
}
