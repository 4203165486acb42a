package script

import (
	"fmt"
	"strings"
)

// BuiltinInfo describes one of pgbench's builtin scripts, for -b list and
// --show-script.
type BuiltinInfo struct {
	Name   string // what -b takes: "tpcb-like"
	Desc   string // the transaction type pgbench prints: "<builtin: TPC-B (sort of)>"
	Source string // the script text
}

// tpcbSetup is the variable setup shared by the update-heavy builtins.
const tpcbSetup = `\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
`

// builtins are pgbench's builtin_script[] (PostgreSQL 15–17), text for text.
var builtins = [...]BuiltinInfo{
	{
		Name: "tpcb-like",
		Desc: "<builtin: TPC-B (sort of)>",
		Source: tpcbSetup + `BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`,
	},
	{
		Name: "simple-update",
		Desc: "<builtin: simple update>",
		Source: tpcbSetup + `BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`,
	},
	{
		Name: "select-only",
		Desc: "<builtin: select only>",
		Source: `\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
`,
	},
}

// BuiltinNames lists the builtin scripts in pgbench's order, for -b list.
func BuiltinNames() []BuiltinInfo {
	return append([]BuiltinInfo(nil), builtins[:]...)
}

// FindBuiltin returns the builtin script whose name is name or starts
// with it, as pgbench's findBuiltin does; a prefix matching several is an
// error.
func FindBuiltin(name string) (BuiltinInfo, error) {
	var found []BuiltinInfo
	for _, b := range builtins {
		if strings.HasPrefix(b.Name, name) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return BuiltinInfo{}, fmt.Errorf("no builtin script found for name %q (available: %s)", name, builtinList())
	default:
		return BuiltinInfo{}, fmt.Errorf("ambiguous builtin name: %d builtin scripts found for prefix %q (available: %s)", len(found), name, builtinList())
	}
}

func builtinList() string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.Name
	}
	return strings.Join(names, ", ")
}

// Builtin parses a builtin script chosen by name or unique prefix (pgbench's
// -b). Its Name is the transaction type pgbench prints, such as
// "<builtin: TPC-B (sort of)>". "list" is not a script: the caller prints
// BuiltinNames for it.
func Builtin(name string, syms *Symbols) (*Script, error) {
	b, err := FindBuiltin(name)
	if err != nil {
		return nil, err
	}
	s, err := Parse(b.Desc, []byte(b.Source), syms)
	if err != nil {
		return nil, fmt.Errorf("builtin script %s: %w", b.Name, err)
	}
	return s, nil
}
