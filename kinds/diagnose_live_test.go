package kinds_test

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/firedrill/firedrill/diagnose"
	"github.com/firedrill/firedrill/diagnose/diagnosetest"
	"github.com/firedrill/firedrill/kinds"
)

// liveCadences are the pass schedules replayed, as {every, phase}
// seconds: every second (the most passes a live stream could make, so the
// most chances to show a severity that does not last), and the live
// stream's own 10 s cadence at each of its ten phases. Under the race
// detector (ten times slower: subtrans alone took over 9 minutes) only
// the stream's cadence from two phases; the data races are the same.
func liveCadences() [][2]float64 {
	if raceDetector {
		return [][2]float64{{diagnose.DefaultConfirmS, 0}, {diagnose.DefaultConfirmS, 5}}
	}
	out := [][2]float64{{1, 0}}
	for phase := 0.0; phase < diagnose.DefaultConfirmS; phase++ {
		out = append(out, [2]float64{diagnose.DefaultConfirmS, phase})
	}
	return out
}

// TestLiveEqualsFinal replays every recording as the live stream sees it
// (what was recorded up to each second, no summary), passes each
// cadence's rules through the live stream's confirmation, and counts per
// rule the findings shown live as WARNING or CRITICAL and those of them
// the final report withdraws (drops, or lowers without saying the
// incident resolved). diagnose/README.md shows the table; it must stay
// all zeros.
func TestLiveEqualsFinal(t *testing.T) {
	t.Parallel()
	reg := kinds.Registry()
	type tally struct{ shown, withdrawn, unconfirmed int }
	var mu sync.Mutex
	table := map[string]*tally{}
	var withdrawn []string
	t.Run("replay", func(t *testing.T) {
		for _, name := range diagnosetest.Recordings(t) {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				run := diagnosetest.Open(t, name)
				final := diagnose.DiagnoseTargets(run, reg.Rules)
				end := math.Ceil(diagnose.RunEnd(run))
				passes := map[float64][]diagnose.Finding{}
				for _, c := range liveCadences() {
					for sec := 1 + c[1]; sec <= end; sec += c[0] {
						if _, ok := passes[sec]; !ok {
							passes[sec] = diagnose.DiagnoseTargets(prefix(run, sec), reg.Rules)
						}
					}
				}
				// shown: the most severe each finding was shown at by any
				// cadence; raw: by the rules before confirmation.
				shown, raw := map[string]diagnose.Finding{}, map[string]diagnose.Finding{}
				shownAt := map[string]string{}
				keep := func(m map[string]diagnose.Finding, f diagnose.Finding) bool {
					if diagnose.SeverityRank(f.Severity) > diagnose.SeverityRank(diagnose.Warning) {
						return false
					}
					k := diagnose.LiveKey(f)
					if prev, ok := m[k]; ok && diagnose.SeverityRank(f.Severity) >= diagnose.SeverityRank(prev.Severity) {
						return false
					}
					m[k] = f
					return true
				}
				for _, c := range liveCadences() {
					var gate diagnose.Confirmation
					for sec := 1 + c[1]; sec <= end; sec += c[0] {
						for _, f := range passes[sec] {
							keep(raw, f)
						}
						for _, f := range gate.Confirm(sec, passes[sec]) {
							if keep(shown, f) {
								shownAt[diagnose.LiveKey(f)] = fmt.Sprintf("%.0f s (every %.0f s from %.0f s)", sec, c[0], 1+c[1])
							}
						}
					}
				}
				mu.Lock()
				defer mu.Unlock()
				count := func(rule string) *tally {
					if table[rule] == nil {
						table[rule] = &tally{}
					}
					return table[rule]
				}
				for k, live := range raw {
					if diagnose.Withdrawn(live, final) {
						if s, ok := shown[k]; !ok || diagnose.SeverityRank(s.Severity) > diagnose.SeverityRank(live.Severity) {
							count(live.Rule).unconfirmed++
						}
					}
				}
				for k, live := range shown {
					count(live.Rule).shown++
					if diagnose.Withdrawn(live, final) {
						count(live.Rule).withdrawn++
						fin := "absent"
						if f, ok := diagnose.FinalOf(live, final); ok {
							fin = f.Severity
						}
						withdrawn = append(withdrawn, fmt.Sprintf("%s: %s shown %s at %s, %s in the final report: %s",
							name, live.Rule, live.Severity, shownAt[k], fin, live.Headline))
					}
				}
			})
		}
	})
	var rules []string
	for r := range table {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	var b strings.Builder
	b.WriteString("| rule | shown live | withdrawn by the final report | held back by the confirmation |\n| --- | --- | --- | --- |\n")
	for _, r := range rules {
		fmt.Fprintf(&b, "| `%s` | %d | %d | %d |\n", r, table[r].shown, table[r].withdrawn, table[r].unconfirmed)
	}
	t.Logf("\n%s", b.String())
	sort.Strings(withdrawn)
	for _, w := range withdrawn {
		t.Error(w)
	}
}
