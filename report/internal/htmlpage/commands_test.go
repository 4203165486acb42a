package htmlpage

import (
	"testing"

	"github.com/firedrill/firedrill/timeline"
)

// A script of more commands than a page should list keeps those with the
// most time spent in them and every failing one, in script order, and
// says how many it left out.
func TestScriptViewKeepsTheCostliestCommands(t *testing.T) {
	t.Parallel()
	const n = 3 * maxCommandRows
	sc := timeline.ScriptSummary{Name: "long.sql"}
	for i := range n {
		c := timeline.CommandSummary{Line: i + 1, Count: 10, MeanUS: float64(i % 7)}
		if i >= n-maxCommandRows+1 {
			c.MeanUS = 1000 + float64(i) // the costliest, at the end
		}
		if i == 5 {
			c.Failures = 1 // cheap, but failed
		}
		sc.Commands = append(sc.Commands, c)
	}
	v := newScriptView("w", sc)
	if len(v.Commands) != maxCommandRows || v.Hidden != n-maxCommandRows {
		t.Fatalf("kept %d commands, hid %d; want %d and %d", len(v.Commands), v.Hidden, maxCommandRows, n-maxCommandRows)
	}
	if v.Commands[0].Line != 6 {
		t.Errorf("first kept command is line %d, want the failed one (line 6)", v.Commands[0].Line)
	}
	for i := 1; i < len(v.Commands); i++ {
		if v.Commands[i].Line <= v.Commands[i-1].Line {
			t.Fatalf("commands out of script order at %d: line %d after %d", i, v.Commands[i].Line, v.Commands[i-1].Line)
		}
		if v.Commands[i].MeanUS < 1000 {
			t.Fatalf("kept a cheap command (line %d, %.0f µs) over a costly one", v.Commands[i].Line, v.Commands[i].MeanUS)
		}
	}
	short := timeline.ScriptSummary{Commands: sc.Commands[:10]}
	if v := newScriptView("w", short); len(v.Commands) != 10 || v.Hidden != 0 {
		t.Errorf("a short script lost commands: %d kept, %d hidden", len(v.Commands), v.Hidden)
	}
}
