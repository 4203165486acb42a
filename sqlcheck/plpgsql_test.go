package sqlcheck

import (
	"strings"
	"testing"
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
		lockWrite  string   // the table of LockThenSubxactWrite, "" for none
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
			b := ParsePLpgSQL(tt.body)
			if b.ExceptionBlocks != tt.blocks || b.LoopBlocks != tt.loopBlocks {
				t.Errorf("blocks %d (in loops %d), want %d (%d)", b.ExceptionBlocks, b.LoopBlocks, tt.blocks, tt.loopBlocks)
			}
			find := func(prefix string) (BodyStmt, bool) {
				for _, s := range b.Stmts {
					if strings.HasPrefix(s.Text, prefix) {
						return s, true
					}
				}
				return BodyStmt{}, false
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
			_, _, table, ok := b.LockThenSubxactWrite()
			if table != tt.lockWrite || ok != (tt.lockWrite != "") {
				t.Errorf("LockThenSubxactWrite: %q %v, want %q", table, ok, tt.lockWrite)
			}
		})
	}
	// Lines point at the statement, not at the BEGIN before it.
	b := ParsePLpgSQL("\nBEGIN\n  PERFORM 1 FROM t FOR UPDATE;\n  BEGIN\n    UPDATE t SET n = 1;\n  EXCEPTION WHEN others THEN NULL;\n  END;\nEND")
	if l, w, _, ok := b.LockThenSubxactWrite(); !ok || l.Line != 3 || w.Line != 5 || b.FirstBlockLine != 4 {
		t.Errorf("lines: lock %d, write %d, block %d; want 3, 5, 4", l.Line, w.Line, b.FirstBlockLine)
	}
}

func FuzzParsePLpgSQL(f *testing.F) {
	for _, s := range []string{"BEGIN PERFORM 1 FROM t FOR UPDATE; BEGIN UPDATE t SET a=1; EXCEPTION WHEN others THEN END; END",
		"FOR r IN SELECT 1 LOOP BEGIN INSERT INTO x VALUES (1); EXCEPTION WHEN others THEN NULL; END; END LOOP", "$$;'", "END; END; END"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		b := ParsePLpgSQL(body)
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
