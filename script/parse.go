package script

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// maxMetaWords is the most words a meta-command may have, its name
// included (pgbench's MAX_ARGS).
const maxMetaWords = 256

// maxSQLTextLen is how much of a SQL command pgbench keeps for its -r
// report (a 128-byte buffer, NUL included).
const maxSQLTextLen = 127

// metaCommands maps the lower-cased meta-command names to what they are.
var metaCommands = map[string]metaCommand{
	"set":           metaSet,
	"setshell":      metaSetShell,
	"shell":         metaShell,
	"sleep":         metaSleep,
	"gset":          metaGset,
	"aset":          metaAset,
	"if":            metaIf,
	"elif":          metaElif,
	"else":          metaElse,
	"endif":         metaEndif,
	"startpipeline": metaStartPipeline,
	"syncpipeline":  metaSyncPipeline,
	"endpipeline":   metaEndPipeline,
}

type metaCommand uint8

// argumentlessKinds are the meta-commands that take no argument.
var argumentlessKinds = map[metaCommand]Kind{
	metaElse:          KindElse,
	metaEndif:         KindEndif,
	metaStartPipeline: KindStartPipeline,
	metaSyncPipeline:  KindSyncPipeline,
	metaEndPipeline:   KindEndPipeline,
}

const (
	metaNone metaCommand = iota
	metaSet
	metaSetShell
	metaShell
	metaSleep
	metaGset
	metaAset
	metaIf
	metaElif
	metaElse
	metaEndif
	metaStartPipeline
	metaSyncPipeline
	metaEndPipeline
)

// Parse reads one script file (pgbench's -f) with pgbench's rules. file
// names the script in errors and becomes its Name; variables are added to
// syms. Errors are *Error values naming file:line:col.
func Parse(file string, src []byte, syms *Symbols) (*Script, error) {
	return parseIn(file, src, syms, pgbench)
}

// parseIn reads a script whose SQL commands are lexed as the dialect
// lexes them.
func parseIn(file string, src []byte, syms *Symbols, d Dialect) (*Script, error) {
	p := &parser{
		file:  file,
		src:   src,
		syms:  syms,
		lexer: sqlLexer{src: src, dialect: d.SQL, everySemicolon: d.EverySemicolon},
	}
	for i, c := range src {
		if c == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return &Script{Name: file, Weight: 1, Commands: p.commands}, nil
}

// parser turns a script's source into Commands, following pgbench's
// ParseScript: SQL text runs until a semicolon or a backslash, and each
// backslash starts a meta-command that runs to the end of its line.
type parser struct {
	file       string
	src        []byte
	syms       *Symbols
	lexer      sqlLexer
	lineStarts []int // offsets of the second and later lines
	commands   []*Command
	// gsets remembers where each \gset or \aset was, by the index of the
	// command it was merged into, for errors found later.
	gsets map[int]word
}

// word is one whitespace-separated word of a meta-command.
type word struct {
	text string
	off  int
}

func (p *parser) parse() error {
	for {
		chunk, stop := p.lexer.scan()
		p.addSQL(chunk)
		if stop == stopBackslash {
			if err := p.backslash(p.lexer.off - 1); err != nil {
				return err
			}
		}
		if stop == stopEOF {
			break
		}
	}
	if len(p.commands) == 0 {
		return &Error{Pos: Pos{File: p.file, Line: 1, Col: 1}, Msg: "empty command list for script"}
	}
	if err := p.linkConditionals(); err != nil {
		return err
	}
	return p.checkPipelines()
}

// addSQL stores the SQL command the lexer collected, unless it holds
// nothing but whitespace and comments.
func (p *parser) addSQL(chunk sqlChunk) {
	skip := skipSQLComments(chunk.text)
	if p.lexer.everySemicolon {
		skip = skipEmptyStatement(p.lexer.dialect, chunk.text)
	}
	if skip < 0 {
		return
	}
	text := string(chunk.text[skip:])
	first := text
	if len(first) > maxSQLTextLen {
		first = first[:maxSQLTextLen]
	}
	if eol := strings.IndexAny(first, "\n\r"); eol >= 0 {
		first = first[:eol]
	}
	cmd := p.newCommand(KindSQL, chunk.start)
	cmd.Text = first
	cmd.SQL = newSQL(text, chunk.compound, p.syms)
	p.commands = append(p.commands, cmd)
}

// backslash parses the meta-command whose backslash is at offset at.
func (p *parser) backslash(at int) error {
	name, ok := p.word()
	if !ok {
		// A backslash alone on its line is ignored, as pgbench does.
		return nil
	}
	meta := metaCommands[strings.ToLower(name.text)]
	if !isASCII(name.text) {
		meta = metaNone
	}
	switch meta {
	case metaSet, metaIf, metaElif:
		return p.exprCommand(at, meta, name)
	}

	var args []word
	for {
		w, ok := p.word()
		if !ok {
			break
		}
		if len(args)+1 >= maxMetaWords {
			return p.errorf(at, "too many arguments in command %q", name.text)
		}
		args = append(args, w)
	}
	// The kind is set below, once the command is known to be valid.
	cmd := p.newCommand(KindSQL, at)
	cmd.Text = p.commandText(at)
	switch meta {
	case metaSleep:
		if err := p.sleepCommand(cmd, at, name, args); err != nil {
			return err
		}
	case metaSetShell, metaShell:
		if err := p.shellCommand(cmd, at, meta, name, args); err != nil {
			return err
		}
	case metaElse, metaEndif, metaStartPipeline, metaSyncPipeline, metaEndPipeline:
		if len(args) > 0 {
			return p.errorf(args[0].off, "unexpected argument in command %q", name.text)
		}
		cmd.Kind = argumentlessKinds[meta]
	case metaGset, metaAset:
		return p.attachGset(at, meta, name, args)
	default:
		return p.errorf(at, "invalid command \\%s", name.text)
	}
	p.commands = append(p.commands, cmd)
	return nil
}

// exprCommand parses \set, \if and \elif, whose rest of line (with
// backslash-newline continuations) is an expression.
func (p *parser) exprCommand(at int, meta metaCommand, name word) error {
	cmd := p.newCommand(KindSet, at)
	switch meta {
	case metaSet:
		cmd.Kind = KindSet
		target, ok := p.word()
		if !ok {
			return p.errorf(at, "missing argument in command %q", name.text)
		}
		if !validVarName(target.text) {
			return p.errorf(target.off, "invalid variable name %q in command %q", target.text, name.text)
		}
		cmd.Var = p.syms.Ref(target.text)
	case metaIf:
		cmd.Kind = KindIf
	case metaElif:
		cmd.Kind = KindElif
	}

	start := p.lexer.off
	end := start
	for end < len(p.src) && p.src[end] != '\n' {
		end += max(1, continuationLen(p.src, end))
	}
	expr, err := ParseExpr(string(p.src[start:end]), p.pos(start), p.syms)
	if err != nil {
		var exprErr *Error
		if errors.As(err, &exprErr) {
			return &Error{Pos: exprErr.Pos, Msg: fmt.Sprintf("%s in command %q", exprErr.Msg, name.text)}
		}
		return p.errorf(start, "%v in command %q", err, name.text)
	}
	cmd.Expr = expr
	if end < len(p.src) {
		end++ // the newline ends the command
	}
	p.lexer.off = end
	cmd.Text = p.commandText(at)
	p.commands = append(p.commands, cmd)
	return nil
}

// sleepCommand fills in a \sleep: a count or :variable, and a unit that
// may be glued to a literal count ("10ms").
func (p *parser) sleepCommand(cmd *Command, at int, name word, args []word) error {
	cmd.Kind = KindSleep
	if len(args) < 1 {
		return p.errorf(at, "missing argument in command %q", name.text)
	}
	if len(args) > 2 {
		return p.errorf(args[2].off, "too many arguments in command %q", name.text)
	}
	count := args[0]
	var unit *word
	if len(args) == 2 {
		unit = &args[1]
	}
	d := Duration{Var: NoVar, Unit: 1_000_000}
	if strings.HasPrefix(count.text, ":") {
		varName := count.text[1:]
		if !validVarName(varName) {
			return p.errorf(count.off, "invalid variable name %q in command %q", varName, name.text)
		}
		d.Var = p.syms.Ref(varName)
	} else {
		digits := count.text
		if digits != "" && (digits[0] == '+' || digits[0] == '-') {
			digits = digits[1:]
		}
		n := 0
		for n < len(digits) && isDigit(digits[n]) {
			n++
		}
		if n < len(digits) {
			if unit != nil || n == 0 {
				return p.errorf(count.off, "invalid sleep time, must be an integer (%s) in command %q", count.text, name.text)
			}
			glued := len(count.text) - len(digits) + n
			unit = &word{text: count.text[glued:], off: count.off + glued}
		}
		d.Literal = atoi64(count.text)
	}
	if unit != nil {
		switch strings.ToLower(unit.text) {
		case "us":
			d.Unit = 1
		case "ms":
			d.Unit = 1000
		case "s":
			d.Unit = 1_000_000
		default:
			return p.errorf(unit.off, "unrecognized time unit, must be us, ms or s (%s) in command %q", unit.text, name.text)
		}
	}
	cmd.Sleep = d
	return nil
}

// shellCommand fills in \shell and \setshell.
func (p *parser) shellCommand(cmd *Command, at int, meta metaCommand, name word, args []word) error {
	cmd.Kind = KindShell
	if meta == metaSetShell {
		cmd.Kind = KindSetShell
		if len(args) < 2 {
			return p.errorf(at, "missing argument in command %q", name.text)
		}
		if !validVarName(args[0].text) {
			return p.errorf(args[0].off, "invalid variable name %q in command %q", args[0].text, name.text)
		}
		cmd.Var = p.syms.Ref(args[0].text)
		args = args[1:]
	} else if len(args) < 1 {
		return p.errorf(at, "missing command in command %q", name.text)
	}
	cmd.Args = make([]Arg, len(args))
	for i, a := range args {
		switch {
		case !strings.HasPrefix(a.text, ":"):
			cmd.Args[i] = Arg{Text: a.text, Var: NoVar}
		case strings.HasPrefix(a.text, "::"):
			cmd.Args[i] = Arg{Text: a.text[1:], Var: NoVar}
		default:
			varName := a.text[1:]
			if !validVarName(varName) {
				return p.errorf(a.off, "invalid variable name %q in command %q", varName, name.text)
			}
			cmd.Args[i] = Arg{Text: a.text, Var: p.syms.Ref(varName)}
		}
	}
	return nil
}

// attachGset merges \gset or \aset into the SQL command before it, as
// pgbench does: it takes no command slot of its own.
func (p *parser) attachGset(at int, meta metaCommand, name word, args []word) error {
	if len(args) > 1 {
		return p.errorf(args[1].off, "too many arguments in command %q", name.text)
	}
	if len(p.commands) == 0 {
		return p.errorf(at, "\\%s must follow an SQL command", name.text)
	}
	prev := p.commands[len(p.commands)-1]
	if prev.Kind != KindSQL || prev.SQL.Gset != nil {
		return p.errorf(at, "\\%s must follow an SQL command (the command before it is %s)", name.text, describe(prev))
	}
	gset := &Gset{All: meta == metaAset}
	if len(args) == 1 {
		gset.Prefix = args[0].text
	}
	prev.SQL.Gset = gset
	if p.gsets == nil {
		p.gsets = make(map[int]word)
	}
	p.gsets[len(p.commands)-1] = word{text: name.text, off: at}
	return nil
}

// describe names a command in an error message.
func describe(cmd *Command) string {
	if cmd.Kind == KindSQL {
		return fmt.Sprintf("%q, which already has a \\gset or \\aset", cmd.Text)
	}
	return fmt.Sprintf("%q at line %d", cmd.Text, cmd.Pos.Line)
}

// linkConditionals checks the nesting of \if, \elif, \else and \endif (as
// pgbench's CheckConditional does, but naming the line) and sets their
// Next and End indexes.
func (p *parser) linkConditionals() error {
	type frame struct {
		branches []int // \if, \elif..., \else
		sawElse  bool
	}
	var stack []*frame
	for i, cmd := range p.commands {
		switch cmd.Kind {
		case KindIf:
			stack = append(stack, &frame{branches: []int{i}})
		case KindElif, KindElse:
			word := "\\elif"
			if cmd.Kind == KindElse {
				word = "\\else"
			}
			if len(stack) == 0 {
				return &Error{Pos: cmd.Pos, Msg: word + " without matching \\if"}
			}
			top := stack[len(stack)-1]
			if top.sawElse {
				return &Error{Pos: cmd.Pos, Msg: fmt.Sprintf("%s after \\else (the \\else is at line %d)",
					word, p.commands[top.branches[len(top.branches)-1]].Pos.Line)}
			}
			p.commands[top.branches[len(top.branches)-1]].Next = i
			top.branches = append(top.branches, i)
			top.sawElse = cmd.Kind == KindElse
		case KindEndif:
			if len(stack) == 0 {
				return &Error{Pos: cmd.Pos, Msg: "\\endif without matching \\if"}
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			last := p.commands[top.branches[len(top.branches)-1]]
			if last.Kind != KindElse {
				last.Next = i
			}
			for _, b := range top.branches {
				p.commands[b].End = i
			}
		}
	}
	if len(stack) > 0 {
		open := p.commands[stack[len(stack)-1].branches[0]]
		return &Error{Pos: open.Pos, Msg: "\\if without matching \\endif"}
	}
	return nil
}

// checkPipelines reports, before the run, the pipeline errors pgbench
// finds only when a client reaches them: \startpipeline inside a pipeline,
// \syncpipeline or \endpipeline outside one, \gset or \aset inside one, and
// a pipeline still open at the end of the script. A script that starts or
// ends pipelines inside \if branches is left to the run-time checks, as its
// structure depends on the branches taken.
func (p *parser) checkPipelines() error {
	depth := 0
	for _, cmd := range p.commands {
		switch cmd.Kind {
		case KindIf:
			depth++
		case KindEndif:
			depth--
		case KindStartPipeline, KindSyncPipeline, KindEndPipeline:
			if depth > 0 {
				return nil
			}
		}
	}
	var open *Command
	for i, cmd := range p.commands {
		switch cmd.Kind {
		case KindStartPipeline:
			if open != nil {
				return &Error{Pos: cmd.Pos, Msg: fmt.Sprintf("\\startpipeline inside a pipeline (already in pipeline mode since line %d)", open.Pos.Line)}
			}
			open = cmd
		case KindSyncPipeline, KindEndPipeline:
			if open == nil {
				return &Error{Pos: cmd.Pos, Msg: fmt.Sprintf("\\%s without \\startpipeline (not in pipeline mode)", cmd.Kind)}
			}
			if cmd.Kind == KindEndPipeline {
				open = nil
			}
		case KindSQL:
			if g, ok := p.gsets[i]; ok && open != nil {
				return p.errorf(g.off, "\\%s is not allowed in pipeline mode (pipeline started at line %d)", g.text, open.Pos.Line)
			}
		}
	}
	if open != nil {
		return &Error{Pos: open.Pos, Msg: "\\startpipeline without \\endpipeline (the script ends with the pipeline open)"}
	}
	return nil
}

// word lexes one word of a meta-command as pgbench's exprscan.l does:
// words are separated by spaces, tabs, \r, \f and \v, a backslash before a
// newline continues the command, and a newline (consumed) or the end of
// the script ends it (ok false).
func (p *parser) word() (word, bool) {
	s, i := p.src, p.lexer.off
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case continuationLen(s, i) > 0:
			i += continuationLen(s, i)
		case c == '\n':
			p.lexer.off = i + 1
			return word{}, false
		default:
			start := i
			for i < len(s) && !isWordSpace(s[i]) {
				i++
			}
			end := i
			// "word\<newline>" is the word, then a continuation.
			if n := continuationLen(s, end-1); n > 0 && end-start >= 2 {
				end--
				i += n - 1
			}
			p.lexer.off = i
			return word{text: string(s[start:end]), off: start}, true
		}
	}
	p.lexer.off = i
	return word{}, false
}

// continuationLen is the length of the backslash-newline (or
// backslash-CR-LF) at i that continues a meta-command, or 0.
func continuationLen(s []byte, i int) int {
	if byteAt(s, i) != '\\' {
		return 0
	}
	switch {
	case byteAt(s, i+1) == '\n':
		return 2
	case byteAt(s, i+1) == '\r' && byteAt(s, i+2) == '\n':
		return 3
	}
	return 0
}

func isWordSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\n'
}

// commandText is what pgbench prints for a meta-command in its -r report:
// the source from the backslash to where the command ended, without the
// line end.
func (p *parser) commandText(at int) string {
	text := p.src[at:p.lexer.off]
	for len(text) > 0 && (text[len(text)-1] == '\n' || text[len(text)-1] == '\r') {
		text = text[:len(text)-1]
	}
	return string(text)
}

// pos converts a source offset to a line and column.
func (p *parser) pos(off int) Pos {
	line := sort.SearchInts(p.lineStarts, off+1)
	lineStart := 0
	if line > 0 {
		lineStart = p.lineStarts[line-1]
	}
	return Pos{File: p.file, Line: line + 1, Col: off - lineStart + 1}
}

// newCommand returns a command of kind at offset at, referring to no variable.
func (p *parser) newCommand(kind Kind, at int) *Command {
	return &Command{Kind: kind, Pos: p.pos(at), Var: NoVar, Sleep: Duration{Var: NoVar}}
}

func (p *parser) errorf(off int, format string, args ...any) error {
	return &Error{Pos: p.pos(off), Msg: fmt.Sprintf(format, args...)}
}

// atoi64 converts like C's atoi: optional whitespace and sign, then digits
// up to the first non-digit; it saturates instead of overflowing.
func atoi64[T string | []byte](s T) int64 {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	negative := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		negative = s[i] == '-'
		i++
	}
	var n int64
	for ; i < len(s) && isDigit(s[i]); i++ {
		d := int64(s[i] - '0')
		if n > (math.MaxInt64-d)/10 {
			n = math.MaxInt64
			continue
		}
		n = n*10 + d
	}
	if negative {
		return -n
	}
	return n
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Micros evaluates a \sleep duration in microseconds. A variable's text is
// read as pgbench's evaluateSleep reads it: a leading integer (atoi), and an
// error if the text does not start with a digit and gives zero.
func (d Duration) Micros(vars *Vars) (int64, error) {
	count := d.Literal
	if d.Var != NoVar {
		var scratch [32]byte
		text, ok := vars.AppendText(scratch[:0], d.Var)
		if !ok {
			return 0, fmt.Errorf("\\sleep: undefined variable %q", vars.Symbols().Name(d.Var))
		}
		count = atoi64(text)
		if count == 0 && (len(text) == 0 || !isDigit(text[0])) {
			return 0, fmt.Errorf("\\sleep: invalid sleep time %q for variable %q", text, vars.Symbols().Name(d.Var))
		}
	}
	unit := d.Unit
	if unit == 0 {
		unit = 1_000_000
	}
	switch {
	case count > math.MaxInt64/unit:
		return math.MaxInt64, nil
	case count < math.MinInt64/unit:
		return math.MinInt64, nil
	}
	return count * unit, nil
}
