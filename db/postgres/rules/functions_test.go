package pgrules

import (
	"encoding/json"
	"github.com/firedrill/firedrill/diagnose"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/db/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

// withEvidence is a copy of run whose scripts are scripts and which read
// fks (and fns) at its end.
func withEvidence(run *timeline.Run, scripts map[string][]string, fns []pgmetric.Function, fks []pgmetric.ForeignKey) *timeline.Run {
	v := *run
	v.Manifest.Workloads = nil
	for _, w := range run.Manifest.Workloads {
		w.Scripts = append([]timeline.ScriptInfo(nil), w.Scripts...)
		for i := range w.Scripts {
			if cmds, ok := scripts[w.Scripts[i].Name]; ok {
				w.Scripts[i].Commands = cmds
			}
		}
		v.Manifest.Workloads = append(v.Manifest.Workloads, w)
	}
	v.Samples = nil
	for _, s := range run.Samples {
		if s.Source != pgmetric.Functions && s.Source != pgmetric.ForeignKeys {
			v.Samples = append(v.Samples, s)
		}
	}
	end := diagnose.RunEnd(run)
	if fns != nil {
		d, _ := json.Marshal(fns)
		v.Samples = append(v.Samples, timeline.Sample{Source: pgmetric.Functions, T: end, Detail: d})
	}
	if fks != nil {
		d, _ := json.Marshal(fks)
		v.Samples = append(v.Samples, timeline.Sample{Source: pgmetric.ForeignKeys, T: end, Detail: d})
	}
	v.Summary = nil // its command lines are the recorded script's
	return &v
}

// TestMultixactNamesTheMechanism: the same recorded thrash, told with the
// scripts and the functions of each cause, names that cause in the
// headline and the remedy.
func TestMultixactNamesTheMechanism(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "mxfunc")
	script := run.Manifest.Workloads[0].Scripts[0].Name
	bump := pgmetric.Function{Schema: "public", Name: "bump", Language: "plpgsql", Body: `
BEGIN
  BEGIN
    UPDATE pgbench_accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
  EXCEPTION WHEN serialization_failure THEN NULL;
  END;
END`}
	fk := pgmetric.ForeignKey{Name: "ledger_aid_fkey", Schema: "public", Table: "ledger", Columns: []string{"aid"},
		RefSchema: "public", RefTable: "pgbench_accounts", RefColumns: []string{"aid"}}
	tests := []struct {
		name     string
		commands []string
		fns      []pgmetric.Function
		fks      []pgmetric.ForeignKey
		headline []string
		remedy   string
	}{
		{"as recorded: the lock and the EXCEPTION block in the function", nil, nil, nil,
			[]string{"function bump() (called at bump.sql:4) locks pgbench_accounts rows FOR UPDATE (line 3)", "EXCEPTION block (line 5)"},
			"In bump(), take the row lock inside the BEGIN … EXCEPTION block"},
		{"the script locks, the function's EXCEPTION block updates",
			[]string{"BEGIN;", "SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;", "SELECT bump(:aid, :delta);", "COMMIT;"},
			[]pgmetric.Function{bump}, nil,
			[]string{"runs after", "locked pgbench_accounts rows FOR UPDATE", "EXCEPTION block"}, "In bump()"},
		{"FOR SHARE in the script",
			[]string{"BEGIN;", "SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR SHARE;", "COMMIT;"}, []pgmetric.Function{}, nil,
			[]string{"takes FOR SHARE row locks on pgbench_accounts"}, "Take FOR SHARE out"},
		{"a foreign-key check",
			[]string{"BEGIN;", "INSERT INTO ledger (aid, delta) VALUES (:aid, :delta);", "COMMIT;"}, []pgmetric.Function{},
			[]pgmetric.ForeignKey{fk},
			[]string{"writes ledger, whose foreign key ledger_aid_fkey checks the pgbench_accounts row with FOR KEY SHARE"},
			"Spread the writes that reference one pgbench_accounts row"},
		{"pgJDBC autosave",
			[]string{"BEGIN;", "SELECT abalance FROM pgbench_accounts WHERE aid = :aid FOR UPDATE;", "SAVEPOINT PGJDBC_AUTOSAVE;",
				"UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;", "RELEASE SAVEPOINT PGJDBC_AUTOSAVE;", "COMMIT;"},
			[]pgmetric.Function{}, nil,
			[]string{"inside a SAVEPOINT", "pgJDBC's autosave"}, "autosave=never"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run
			if tt.commands != nil {
				r = withEvidence(run, map[string][]string{script: tt.commands}, tt.fns, tt.fks)
			}
			fs := findingsOf(multixactSLRUThrash{}, r)
			if len(fs) != 1 {
				t.Fatalf("got %d findings, want 1", len(fs))
			}
			for _, s := range tt.headline {
				if !strings.Contains(fs[0].Headline, s) {
					t.Errorf("headline lacks %q: %s", s, fs[0].Headline)
				}
			}
			if !strings.Contains(fs[0].Remedy, tt.remedy) {
				t.Errorf("remedy lacks %q: %s", tt.remedy, fs[0].Remedy)
			}
		})
	}
}

// TestSubtransactionNamesTheMechanism: the recorded overflow, told with
// the deep script's savepoints moved into a function's EXCEPTION block
// in a loop, or made pgJDBC's autosave, names that mechanism.
func TestSubtransactionNamesTheMechanism(t *testing.T) {
	t.Parallel()
	run := openRecording(t, "subtrans")
	deep := ""
	for _, w := range run.Manifest.Workloads {
		if w.Name == "deep" {
			deep = w.Scripts[0].Name
		}
	}
	fill := pgmetric.Function{Schema: "public", Name: "fill", Language: "plpgsql", Body: `
DECLARE i int;
BEGIN
  FOR i IN 1..90 LOOP
    BEGIN
      UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = p_a + i * 13;
    EXCEPTION WHEN others THEN NULL;
    END;
  END LOOP;
END`}
	autosave := []string{"BEGIN;"}
	for i := 0; i < 90; i++ {
		autosave = append(autosave, "SAVEPOINT PGJDBC_AUTOSAVE;", "UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :a;")
	}
	autosave = append(autosave, "COMMIT;")
	tests := []struct {
		name     string
		commands []string
		fns      []pgmetric.Function
		headline []string
		remedy   string
	}{
		{"EXCEPTION block in a loop", []string{`\set a random(1, 98000 * :scale)`, "BEGIN;", "SELECT fill(:a);", "COMMIT;"},
			[]pgmetric.Function{fill}, []string{"calls fill(), whose BEGIN … EXCEPTION block (line 5) writes inside a subtransaction: one per loop iteration"},
			"In fill(), take the BEGIN … EXCEPTION block out of the loop"},
		{"pgJDBC autosave", autosave, []pgmetric.Function{}, []string{"pgJDBC's autosave sets a SAVEPOINT before every statement"},
			"Turn pgJDBC's autosave off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := findingsOf(subtransactionOverflow{}, withEvidence(run, map[string][]string{deep: tt.commands}, tt.fns, nil))
			if len(fs) != 1 || fs[0].Severity == diagnose.Info {
				t.Fatalf("got %d findings (%+v), want one warning", len(fs), fs)
			}
			for _, s := range tt.headline {
				if !strings.Contains(fs[0].Headline, s) {
					t.Errorf("headline lacks %q: %s", s, fs[0].Headline)
				}
			}
			if !strings.Contains(fs[0].Remedy, tt.remedy) {
				t.Errorf("remedy lacks %q: %s", tt.remedy, fs[0].Remedy)
			}
		})
	}
}

// TestSubtransactionNamesTheFunctionOnItsRecording: on subfunc, recorded
// with the savepoints inside fill()'s EXCEPTION block, the finding names
// the function, its block's line and the loop.
func TestSubtransactionNamesTheFunctionOnItsRecording(t *testing.T) {
	t.Parallel()
	fs := findingsOf(subtransactionOverflow{}, openRecording(t, "subfunc"))
	if len(fs) != 1 || fs[0].Severity == diagnose.Info {
		t.Fatalf("got %d findings (%+v), want one warning", len(fs), fs)
	}
	if want := "fill.sql:3 calls fill(), whose BEGIN … EXCEPTION block (line 5) writes inside a subtransaction: one per loop iteration"; !strings.Contains(fs[0].Headline, want) {
		t.Errorf("headline lacks %q: %s", want, fs[0].Headline)
	}
	if fs[0].Workload != "deep" {
		t.Errorf("workload %q, want deep", fs[0].Workload)
	}
}
