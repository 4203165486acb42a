package script

import (
	"sort"
	"strings"
)

// VarUse is one command's reference to a variable.
type VarUse struct {
	Name string
	Pos  Pos // the command's
	// Script is the script it is in.
	Script *Script
	// Near is a variable the scripts do set whose name is close to
	// Name ("" when none is): the likely intended one.
	Near string
}

// UnsetVariables lists the variables the scripts (one workload's, whose
// clients share their variables) read but that nothing sets: no \set,
// \setshell or \gset in any of them, not one of pgbench's automatic ones
// and not preset (the workload's defines). A SQL \gset or \aset stores
// whatever columns its query returns, so a name it may set (its prefix
// followed by anything) counts as set. Each variable is listed once, at
// its first use.
func UnsetVariables(scripts []*Script, syms *Symbols, preset func(name string) bool) []VarUse {
	set, names := setBy(scripts, syms)
	isSet := func(name string) bool { return set(name) || preset != nil && preset(name) }
	var out []VarUse
	seen := map[string]bool{}
	var in *Script
	use := func(cmd *Command, ref VarRef) {
		if ref == NoVar {
			return
		}
		name := syms.Name(ref)
		if seen[name] || isSet(name) {
			return
		}
		seen[name] = true
		out = append(out, VarUse{Name: name, Pos: cmd.Pos, Script: in, Near: closestName(name, names)})
	}
	for _, sc := range scripts {
		in = sc
		for _, cmd := range sc.Commands {
			if cmd.SQL != nil {
				for _, p := range cmd.SQL.Parts {
					use(cmd, p.Var)
				}
			}
			if cmd.Redis != nil {
				for _, a := range cmd.Redis.Args {
					for _, p := range a.Parts {
						use(cmd, p.Var)
					}
				}
			}
			for _, a := range cmd.Args {
				use(cmd, a.Var)
			}
			if cmd.Kind == KindSleep {
				use(cmd, cmd.Sleep.Var)
			}
			exprVars(cmd.Expr, func(ref VarRef) { use(cmd, ref) })
		}
	}
	return out
}

// exprVars calls visit with each variable an expression reads.
func exprVars(e Expr, visit func(VarRef)) {
	switch e := e.(type) {
	case *varExpr:
		visit(e.ref)
	case *unaryExpr:
		exprVars(e.arg, visit)
	case *binaryExpr:
		exprVars(e.left, visit)
		exprVars(e.right, visit)
	case *callExpr:
		for _, a := range e.args {
			exprVars(a, visit)
		}
	case *andExpr:
		exprVars(e.left, visit)
		exprVars(e.right, visit)
	case *orExpr:
		exprVars(e.left, visit)
		exprVars(e.right, visit)
	case *caseExpr:
		for i := range e.when {
			exprVars(e.when[i], visit)
			exprVars(e.then[i], visit)
		}
		exprVars(e.otherwise, visit)
	}
}

// SetBy says which variables the scripts set (or may set: a SQL \gset's
// prefix followed by anything), pgbench's automatic ones included: what
// scripts that run after them on the same client (a fallback's) may read.
func SetBy(scripts []*Script, syms *Symbols) func(name string) bool {
	set, _ := setBy(scripts, syms)
	return set
}

// setBy is SetBy, and the names set, for suggestions.
func setBy(scripts []*Script, syms *Symbols) (func(name string) bool, []string) {
	set := map[string]bool{VarScale: true, VarClientID: true, VarRandomSeed: true, VarDefaultSeed: true}
	var prefixes []string
	for _, sc := range scripts {
		for _, cmd := range sc.Commands {
			switch {
			case cmd.Kind == KindSet || cmd.Kind == KindSetShell:
				set[syms.Name(cmd.Var)] = true
			case cmd.Kind == KindSQL && cmd.SQL.Gset != nil:
				prefixes = append(prefixes, cmd.SQL.Gset.Prefix)
			case cmd.Kind == KindRedis:
				for _, v := range cmd.Redis.Gset {
					set[syms.Name(v)] = true
				}
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return func(name string) bool {
		if set[name] {
			return true
		}
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}, names
}
