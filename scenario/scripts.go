package scenario

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// LoadScript reads and parses one of a workload's scripts (a file, a
// builtin or inline text) into syms, the variable table its workload's
// clients share. The script's Name and Weight are the source's. Errors in
// a file carry the file's line and column; errors in inline text are
// *Error values at the script's place in the scenario.
func (s *Scenario) LoadScript(src ScriptSource, syms *script.Symbols) (*script.Script, error) {
	sc, err := s.parseScript(src, syms)
	var scriptErr *script.Error
	if err != nil && src.File == "" && src.Builtin == "" && errors.As(err, &scriptErr) {
		return nil, &Error{File: s.File, Pos: src.Pos, Msg: inlineMessage(scriptErr)}
	}
	return sc, err
}

// parseScript parses a script as written, without translating positions.
func (s *Scenario) parseScript(src ScriptSource, syms *script.Symbols) (*script.Script, error) {
	var sc *script.Script
	var err error
	switch {
	case src.File != "":
		path := s.Resolve(src.File)
		var data []byte
		if data, err = readRegular(path); err != nil {
			return nil, fmt.Errorf("script %q: %w", src.Name, err)
		}
		sc, err = script.ParseDialect(path, data, syms, s.Dialect)
	case src.Builtin != "":
		sc, err = script.Builtin(src.Builtin, syms)
	default:
		sc, err = script.ParseDialect(src.Name, []byte(src.Inline), syms, s.Dialect)
	}
	if err != nil {
		return nil, err
	}
	sc.Name, sc.Weight = src.Name, src.Weight
	return sc, nil
}

// ReadSQL returns the text of a setup SQL source, reading its file.
func (s *Scenario) ReadSQL(src SQLSource) (string, error) {
	if src.File == "" {
		return src.Inline, nil
	}
	data, err := readRegular(s.Resolve(src.File))
	if err != nil {
		return "", fmt.Errorf("setup sql: %w", err)
	}
	return string(data), nil
}

// readRegular reads a regular file, refusing devices and FIFOs that a
// mistyped path could name and that would never end.
func readRegular(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.ReadFile(path)
}

// inlineMessage says where in an inline script a problem is, when its
// position cannot be mapped onto the scenario file.
func inlineMessage(e *script.Error) string {
	return fmt.Sprintf("inline script, line %d, column %d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
}

// checkScripts checks a workload's scripts: names, weights, files, that
// each parses, that its commands are the dialect's and that what they
// read is set. nodes are where each script's file or text is written;
// inherited says which variables scripts that ran before on the same
// client set (a fallback's workload's), nil for none.
func (l *loader) checkScripts(w *Workload, what string, nodes []*yaml.Node, inherited func(name string) bool) {
	firstByName := make(map[string]int)
	var total int64
	syms := script.NewSymbols()
	var parsed []parsedScript // for the variables check: every script that parsed
	for i, src := range w.Scripts {
		node := nodes[i]
		if j, dup := firstByName[src.Name]; dup {
			l.hintf(node, "give one a name: of its own", "%s: two scripts are named %q (the first at line %d)", what, src.Name, w.Scripts[j].Pos.Line)
		} else {
			firstByName[src.Name] = i
		}
		total += int64(src.Weight)
		if src.File != "" {
			if !l.checkFile(node, src.File, "script file") {
				continue
			}
			// A file several workloads share reports its errors once
			// (but its variables count in each).
			path := l.s.Resolve(src.File)
			if l.scripts[path] {
				if sc, err := l.s.parseScript(src, syms); err == nil {
					parsed = append(parsed, parsedScript{sc, src, node})
				}
				continue
			}
			l.scripts[path] = true
		}
		sc, err := l.s.parseScript(src, syms)
		if err == nil {
			parsed = append(parsed, parsedScript{sc, src, node})
			if warn := engine.ManyCommandsWarning(len(sc.Commands)); warn != "" {
				p := pos(node)
				l.s.Warnings = append(l.s.Warnings, &Error{File: l.s.File, Pos: p,
					Msg: fmt.Sprintf("warning: %s: %s", what, warn)})
			}
			for _, e := range script.UnknownCommands(sc, l.s.Dialect) {
				l.scriptError(src, node, what, e, "")
			}
			continue
		}
		var scriptErr *script.Error
		switch {
		case !errors.As(err, &scriptErr):
			l.errorf(node, "%s: %v", what, err)
		case src.Builtin != "":
			l.errorf(node, "%s: builtin script %s: %v", what, src.Builtin, err)
		default:
			l.scriptError(src, node, what, scriptErr, "")
		}
	}
	if len(w.Scripts) > 0 && total == 0 {
		l.hintf(nodes[0], "give at least one script a weight above 0", "%s: the scripts' weights add up to 0", what)
	}
	if len(parsed) == len(w.Scripts) {
		l.checkVariables(w, what, parsed, syms, inherited)
	}
}

// setBy says which variables a workload's scripts set (script.SetBy),
// its defines included, read in its own dialect; scripts that do not
// parse set nothing (their errors are reported where they are checked).
func (l *loader) setBy(w *Workload, dialect script.Dialect) func(name string) bool {
	syms := script.NewSymbols()
	saved := l.s.Dialect
	l.s.Dialect = dialect
	defer func() { l.s.Dialect = saved }()
	var scripts []*script.Script
	for _, src := range w.Scripts {
		if sc, err := l.s.parseScript(src, syms); err == nil {
			scripts = append(scripts, sc)
		}
	}
	set := script.SetBy(scripts, syms)
	return func(name string) bool {
		_, ok := w.Defines[name]
		return ok || set(name)
	}
}

// parsedScript is one of a workload's scripts as parsed, with where the
// scenario names it.
type parsedScript struct {
	sc   *script.Script
	src  ScriptSource
	node *yaml.Node
}

// checkVariables refuses a variable the workload's scripts read but
// nothing sets (a typo, ":idd" for ":id"): pgbench would send it as
// written, the server would refuse every transaction.
func (l *loader) checkVariables(w *Workload, what string, parsed []parsedScript, syms *script.Symbols, inherited func(name string) bool) {
	scripts := make([]*script.Script, len(parsed))
	for i, p := range parsed {
		scripts[i] = p.sc
	}
	preset := func(name string) bool {
		_, ok := w.Defines[name]
		return ok || inherited != nil && inherited(name)
	}
	for _, u := range script.UnsetVariables(scripts, syms, preset) {
		msg := fmt.Sprintf("variable :%s is read but never set", u.Name)
		hint := "set it with \\set, \\setshell or \\gset, or in the workload's defines:; a colon the command means literally is written \\:"
		if u.Near != "" {
			msg += fmt.Sprintf("; did you mean :%s?", u.Near)
		}
		for _, p := range parsed {
			if p.sc == u.Script {
				l.scriptError(p.src, p.node, what, &script.Error{Pos: u.Pos, Msg: msg}, hint)
				break
			}
		}
	}
}

// scriptError reports a problem in one of a workload's scripts: at the
// script file's own line, or for inline text at its place in the
// scenario file (or the text's own line and column beside the script's
// place, when its text is not written verbatim).
func (l *loader) scriptError(src ScriptSource, node *yaml.Node, what string, e *script.Error, hint string) {
	where := fmt.Sprintf("inline script %q of %s", src.Name, what)
	if src.File != "" || src.Builtin != "" {
		where = "a script of " + what
	}
	if hint != "" {
		where += ": " + hint
	}
	if src.File != "" || src.Builtin != "" {
		l.errs = append(l.errs, &Error{File: e.Pos.File, Pos: Pos{Line: e.Pos.Line, Col: e.Pos.Col}, Msg: e.Msg, Hint: where})
		return
	}
	if p, ok := l.inlinePos(node, e.Pos.Line, e.Pos.Col); ok {
		l.report(p, where, "%s", e.Msg)
	} else {
		l.hintf(node, where, "%s", inlineMessage(e))
	}
}

// inlinePos maps a line and column of an inline script onto the scenario
// file, when the script's text stands verbatim in the source: a literal
// block (|) or a one-line string without escapes. Otherwise the caller
// reports the script's own line and column beside the node's position.
func (d *decoder) inlinePos(n *yaml.Node, line, col int) (Pos, bool) {
	if n.Line == 0 {
		return Pos{}, false // from --set: not in the file
	}
	scriptLines := strings.Split(n.Value, "\n")
	if line < 1 || line > len(scriptLines) || col < 1 || col-1 > len(scriptLines[line-1]) {
		return Pos{}, false
	}
	want := scriptLines[line-1]
	sourceLine := func(i int) (string, bool) { // i is 1-based
		if i < 1 || i > len(d.lines) {
			return "", false
		}
		return strings.TrimSuffix(d.lines[i-1], "\r"), true
	}
	switch {
	case n.Style&yaml.LiteralStyle != 0:
		// The text starts on the line after the indicator, indented as
		// its first non-blank line.
		indent := -1
		for i := n.Line + 1; i <= len(d.lines); i++ {
			src, _ := sourceLine(i)
			if strings.TrimSpace(src) != "" {
				indent = len(src) - len(strings.TrimLeft(src, " "))
				break
			}
		}
		src, ok := sourceLine(n.Line + line)
		if !ok || indent < 0 {
			return Pos{}, false
		}
		if want == "" && strings.TrimSpace(src) == "" {
			return Pos{Line: n.Line + line, Col: 1}, true
		}
		if len(src) < indent || src[indent:] != want {
			return Pos{}, false
		}
		return Pos{Line: n.Line + line, Col: runeColumn(src, indent+col-1)}, true
	case len(scriptLines) == 1 && n.Style&yaml.FoldedStyle == 0:
		src, ok := sourceLine(n.Line)
		if !ok {
			return Pos{}, false
		}
		start := byteOffset(src, n.Column)
		// A plain string starts at the node; a quoted one after its quote.
		for _, skip := range []int{0, 1} {
			if start+skip <= len(src) && strings.HasPrefix(src[start+skip:], want) {
				return Pos{Line: n.Line, Col: runeColumn(src, start+skip+col-1)}, true
			}
		}
	}
	return Pos{}, false
}

// byteOffset converts a 1-based column in characters, as yaml.v3 counts
// them, to a byte offset in line.
func byteOffset(line string, col int) int {
	off := 0
	for i := 1; i < col && off < len(line); i++ {
		_, size := utf8.DecodeRuneInString(line[off:])
		off += size
	}
	return off
}

// runeColumn converts a byte offset in line to a 1-based column in
// characters, as yaml.v3 reports columns.
func runeColumn(line string, off int) int {
	off = min(off, len(line))
	return utf8.RuneCountInString(line[:off]) + 1
}
