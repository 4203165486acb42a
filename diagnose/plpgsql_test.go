package diagnose

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend/postgres/pgmetric"
	"github.com/firedrill/firedrill/timeline"
)

func TestParsePLpgSQL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		blocks     int
		loopBlocks int
		subxact    []string // texts of statements in a subtransaction, by prefix
		plain      []string // and of statements outside one
		lockWrite  string   // the table of lockThenSubxactWrite, "" for none
	}{
		{"lock outside, update inside", `
BEGIN
  PERFORM 1 FROM accounts WHERE id = p_id FOR UPDATE;
  BEGIN
    UPDATE accounts SET n = n + 1 WHERE id = p_id;
  EXCEPTION WHEN unique_violation THEN
    UPDATE audit SET n = 0;  -- the handler runs outside the subtransaction
  END;
END`, 1, 0, []string{"UPDATE accounts"}, []string{"PERFORM 1", "UPDATE audit"}, "accounts"},
		{"a block without EXCEPTION is no subtransaction", `
BEGIN
  SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE;
  BEGIN
    UPDATE accounts SET n = 1 WHERE id = 1;
  END;
END`, 0, 0, nil, []string{"SELECT 1", "UPDATE accounts"}, ""},
		{"one subtransaction per iteration", `
DECLARE r record;
BEGIN
  FOR r IN SELECT id FROM items LOOP
    BEGIN
      INSERT INTO ledger VALUES (r.id);
    EXCEPTION
      WHEN unique_violation THEN NULL;
      WHEN others THEN RAISE;
    END;
  END LOOP;
  /* a comment; with a semicolon */
  UPDATE items SET done = true WHERE id > 0;
END`, 1, 1, []string{"INSERT INTO ledger"}, []string{"UPDATE items"}, ""},
		{"the whole body in a block, labels, IF", `
<<outer>>
BEGIN
  IF p_id > 0 THEN
    UPDATE accounts SET n = $q$;$q$ WHERE id = p_id;
  END IF;
EXCEPTION WHEN others THEN
  RETURN;
END outer`, 1, 0, []string{"UPDATE accounts"}, nil, ""},
		{"SQL function", `UPDATE accounts SET n = n + 1 WHERE id = $1; SELECT n FROM accounts WHERE id = $1 FOR SHARE`, 0, 0, nil,
			[]string{"UPDATE accounts", "SELECT n"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := parsePLpgSQL(pgmetric.Function{Name: "f", Language: "plpgsql", Body: tt.body})
			if b.ExceptionBlocks != tt.blocks || b.LoopBlocks != tt.loopBlocks {
				t.Errorf("blocks %d (in loops %d), want %d (%d)", b.ExceptionBlocks, b.LoopBlocks, tt.blocks, tt.loopBlocks)
			}
			find := func(prefix string) (fnStmt, bool) {
				for _, s := range b.Stmts {
					if strings.HasPrefix(s.Text, prefix) {
						return s, true
					}
				}
				return fnStmt{}, false
			}
			for _, p := range tt.subxact {
				if s, ok := find(p); !ok || !s.InSubxact {
					t.Errorf("%q: found %v, in a subtransaction %v; want true (statements %+v)", p, ok, s.InSubxact, b.Stmts)
				}
			}
			for _, p := range tt.plain {
				if s, ok := find(p); !ok || s.InSubxact {
					t.Errorf("%q: found %v, in a subtransaction %v; want false", p, ok, s.InSubxact)
				}
			}
			_, _, table, ok := b.lockThenSubxactWrite()
			if table != tt.lockWrite || ok != (tt.lockWrite != "") {
				t.Errorf("lockThenSubxactWrite: %q %v, want %q", table, ok, tt.lockWrite)
			}
		})
	}
	// Lines point at the statement, not at the BEGIN before it.
	b := parsePLpgSQL(pgmetric.Function{Body: "\nBEGIN\n  PERFORM 1 FROM t FOR UPDATE;\n  BEGIN\n    UPDATE t SET n = 1;\n  EXCEPTION WHEN others THEN NULL;\n  END;\nEND"})
	if l, w, _, ok := b.lockThenSubxactWrite(); !ok || l.Line != 3 || w.Line != 5 || b.FirstBlockLine != 4 {
		t.Errorf("lines: lock %d, write %d, block %d; want 3, 5, 4", l.Line, w.Line, b.FirstBlockLine)
	}
}

func FuzzParsePLpgSQL(f *testing.F) {
	for _, s := range []string{"BEGIN PERFORM 1 FROM t FOR UPDATE; BEGIN UPDATE t SET a=1; EXCEPTION WHEN others THEN END; END",
		"FOR r IN SELECT 1 LOOP BEGIN INSERT INTO x VALUES (1); EXCEPTION WHEN others THEN NULL; END; END LOOP", "$$;'", "END; END; END"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		b := parsePLpgSQL(pgmetric.Function{Body: body})
		if b.LoopBlocks > b.ExceptionBlocks {
			t.Errorf("%d blocks in loops of %d", b.LoopBlocks, b.ExceptionBlocks)
		}
		for _, s := range b.Stmts {
			if s.Line < 1 {
				t.Errorf("line %d", s.Line)
			}
		}
	})
}

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
	end := RunEnd(run)
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
			if len(fs) != 1 || fs[0].Severity == Info {
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
	if len(fs) != 1 || fs[0].Severity == Info {
		t.Fatalf("got %d findings (%+v), want one warning", len(fs), fs)
	}
	if want := "fill.sql:3 calls fill(), whose BEGIN … EXCEPTION block (line 5) writes inside a subtransaction: one per loop iteration"; !strings.Contains(fs[0].Headline, want) {
		t.Errorf("headline lacks %q: %s", want, fs[0].Headline)
	}
	if fs[0].Workload != "deep" {
		t.Errorf("workload %q, want deep", fs[0].Workload)
	}
}
