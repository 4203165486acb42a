// Package script parses and evaluates transaction scripts in pgbench's
// language: SQL commands with :variables, and the backslash meta-commands
// (\set with pgbench's expression grammar, \sleep, \if, \gset, pipelines,
// \shell). It is pure: it knows nothing of connections or timing, so the
// load engine, the scenario loader and the fuzzers all share it.
package script

import "fmt"

// Pos locates a script construct for error messages.
type Pos struct {
	File string
	Line int // 1-based
	Col  int // 1-based, in bytes
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Error is a problem in a script the user wrote; it names where.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Kind says what a Command does.
type Kind uint8

// The kinds of command in a script.
const (
	KindSQL           Kind = iota // one SQL command (possibly \; compound)
	KindSet                       // \set var expr
	KindSleep                     // \sleep n [us|ms|s]
	KindIf                        // \if expr
	KindElif                      // \elif expr
	KindElse                      // \else
	KindEndif                     // \endif
	KindShell                     // \shell cmd args...
	KindSetShell                  // \setshell var cmd args...
	KindStartPipeline             // \startpipeline
	KindSyncPipeline              // \syncpipeline
	KindEndPipeline               // \endpipeline
	KindRedis                     // one command line (Command.Redis) of a dialect of Lines
	KindCustom                    // one command of a kind's own Syntax (Command.Custom)
)

var kindNames = [...]string{"sql", "set", "sleep", "if", "elif", "else", "endif", "shell", "setshell", "startpipeline", "syncpipeline", "endpipeline", "command", "custom"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Script is one parsed transaction script.
type Script struct {
	// Name is what pgbench prints as the transaction type: the file name,
	// or "<builtin: TPC-B (sort of)>" for a builtin.
	Name string
	// Weight is the relative frequency with which a client picks this script
	// (pgbench's @weight; default 1).
	Weight   int
	Commands []*Command
}

// Command is one command of a script.
type Command struct {
	Kind Kind
	Pos  Pos
	// Text is the command as pgbench prints it in the -r report: for SQL,
	// the first line of the command (at most 127 bytes, trailing spaces
	// kept); for a meta-command, its source from the backslash to the end
	// of the command (continuation lines included), without the line end.
	Text string

	// SQL is set for KindSQL.
	SQL *SQL
	// Redis is set for KindRedis.
	Redis *RedisCommand
	// Custom is set for KindCustom: the command as its kind's
	// Dialect.Syntax parsed it, which only that kind's target reads.
	Custom any

	// Var is the target of KindSet and KindSetShell.
	Var VarRef
	// Expr is the expression of KindSet, KindIf and KindElif.
	Expr Expr

	// Sleep is the duration of KindSleep.
	Sleep Duration

	// Args are the words of KindShell and KindSetShell (command first).
	Args []Arg

	// Next, for KindIf and KindElif, is the index of the next branch
	// (its \elif, \else or \endif) to go to when the condition is false.
	// The engine evaluates an \elif it jumped to, enters an \else, and
	// continues after an \endif.
	Next int
	// End, for KindIf, KindElif and KindElse, is the index of the matching
	// \endif: reaching an \elif or \else by falling through from a taken
	// branch continues at End+1.
	End int
}

// SQL is a SQL command with its variable references resolved at parse time,
// so executing it needs no parsing.
type SQL struct {
	// Parts is the command text split for simple-protocol substitution:
	// literal text and :variable references, in order. An undefined
	// variable is sent as written (":name"), as pgbench does.
	Parts []SQLPart
	// Query is the text with each :variable replaced by $1, $2 …, for the
	// extended and prepared protocols; Params[i] supplies $(i+1).
	Query  string
	Params []VarRef
	// Compound is true when the command holds several statements joined
	// by \; (only the simple protocol can send those).
	Compound bool
	// Gset is set when the command is followed by \gset or \aset.
	Gset *Gset
}

// SQLPart is a piece of a SQL command: literal text, or a variable.
type SQLPart struct {
	Text string // the literal text, or the reference as written (":name")
	Var  VarRef // NoVar for literal text
}

// Gset says how query results are stored into variables.
type Gset struct {
	Prefix string
	// All is true for \aset: every row of every result of a compound
	// command is stored (the last value wins); \gset wants exactly one row
	// from the last result.
	All bool
}

// Duration is the argument of \sleep: a literal or a variable, in a unit.
type Duration struct {
	Literal int64  // used when Var == NoVar
	Var     VarRef // a variable holding the count
	Unit    int64  // microseconds per unit: 1 (us), 1000 (ms), 1000000 (s, default)
}

// Arg is a word of \shell / \setshell: a literal or a variable reference.
type Arg struct {
	Text string // literal text (with pgbench's "::" → ":" unescaping applied)
	Var  VarRef // NoVar for a literal
}

// VarRef is a variable's slot in a Symbols table; lookups at run time are
// slice indexes, never map lookups.
type VarRef int32

// NoVar marks the absence of a variable reference.
const NoVar VarRef = -1

// Expr is a compiled \set / \if expression.
type Expr interface {
	// Eval computes the expression's value for one client.
	Eval(env *Env) (Value, error)
}

// ValueType is the type of a Value.
type ValueType uint8

// The types pgbench expressions compute with.
const (
	TypeNull ValueType = iota
	TypeInt
	TypeDouble
	TypeBool
)

// Value is the result of an expression: a small value type so that
// evaluation allocates nothing.
type Value struct {
	Type ValueType
	Int  int64   // TypeInt; TypeBool uses 0 / 1
	Dbl  float64 // TypeDouble
}

// RedisCommand is one command line of a Redis script, its :variables
// resolved at parse time so that sending it needs no parsing.
type RedisCommand struct {
	// Args are the command's arguments, the command's name first.
	Args []RedisArg
	// Name is the command's name in upper case when it is written
	// literally ("SET", "MULTI"), else empty: what a target needs to know
	// about a command (does it open a transaction?) without reading its
	// arguments.
	Name string
	// Gset lists the variables a following \gset stores the reply in: one
	// for a single value, or one per element of an array reply. Nil
	// without \gset.
	Gset []VarRef
}

// RedisArg is one argument of a Redis command: literal text, or pieces of
// literal text and variables to be joined when the command is sent.
type RedisArg struct {
	// Literal is the whole argument when Parts is nil.
	Literal string
	// Parts are the argument's pieces in order (Arg.Var set for a
	// variable), when it refers to at least one variable.
	Parts []Arg
}
