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
