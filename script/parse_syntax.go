package script

import "strings"

// Syntax is a kind's own language for the commands between a script's
// meta-commands (an HTTP request with its headers and body), parsed by
// the kind, which script/ does not know. The meta-commands and their
// expressions stay script/'s; the kind may own a few meta-commands of its
// own that act on the command before them (Meta). A Syntax value is set
// on Dialect.Syntax; it must be comparable (a pointer or a struct of
// comparable fields), as a Dialect is.
type Syntax interface {
	// Command parses the command that starts at src[at], a line that is
	// not blank, a comment ('#') or a meta-command, and returns what the
	// engine's target will run (Command.Custom), the command's Text (as
	// printed in reports), and the offset just after it (past its last
	// line's newline). Variables are referred to through syms. A problem
	// is returned as *SyntaxError.
	Command(src []byte, at int, syms *Symbols) (cmd any, text string, end int, err error)
	// Meta parses the meta-command \name whose arguments run from
	// src[at] to the end of its line (end, before the newline), when the
	// kind owns it: prev is the script's last command (nil when none).
	// owned false leaves the meta-command to script/. A problem is
	// returned as *SyntaxError.
	Meta(name string, src []byte, at, end int, prev *Command, syms *Symbols) (owned bool, err error)
}

// SyntaxError is a problem a Syntax found at an offset of the script;
// the parser reports it at its file:line:col.
type SyntaxError struct {
	Off int
	Msg string
}

func (e *SyntaxError) Error() string { return e.Msg }

// parseSyntax reads a script whose commands are in a kind's Syntax.
func parseSyntax(file string, src []byte, syms *Symbols, d Dialect) (*Script, error) {
	p := &parser{file: file, src: src, syms: syms, lexer: sqlLexer{src: src}}
	for i, c := range src {
		if c == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	placed := func(err error) error {
		if se, ok := err.(*SyntaxError); ok {
			return p.errorf(min(max(se.Off, 0), len(src)), "%s", se.Msg)
		}
		return err
	}
	for p.lexer.off < len(src) {
		i := p.lexer.off
		for i < len(src) && isRedisSpace(src[i]) {
			i++
		}
		switch {
		case i >= len(src):
			p.lexer.off = i
		case src[i] == '\n':
			p.lexer.off = i + 1
		case src[i] == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			p.lexer.off = i
		case src[i] == '\\':
			p.lexer.off = i + 1
			save := p.lexer.off
			name, ok := p.word()
			p.lexer.off = save
			if ok && isASCII(name.text) {
				argsAt := name.off + len(name.text)
				end := argsAt
				for end < len(src) && src[end] != '\n' {
					end++
				}
				var prev *Command
				if len(p.commands) > 0 {
					prev = p.commands[len(p.commands)-1]
				}
				owned, err := d.Syntax.Meta(strings.ToLower(name.text), src, argsAt, end, prev, syms)
				if err != nil {
					return nil, placed(err)
				}
				if owned {
					p.lexer.off = min(end+1, len(src))
					continue
				}
			}
			if err := p.backslash(i); err != nil {
				return nil, err
			}
		default:
			custom, text, end, err := d.Syntax.Command(src, i, syms)
			if err != nil {
				return nil, placed(err)
			}
			if end <= i {
				return nil, p.errorf(i, "the %s dialect read nothing of this line", d)
			}
			cmd := p.newCommand(KindCustom, i)
			cmd.Text, cmd.Custom = text, custom
			p.commands = append(p.commands, cmd)
			p.lexer.off = min(end, len(src))
		}
	}
	if len(p.commands) == 0 {
		return nil, &Error{Pos: Pos{File: p.file, Line: 1, Col: 1}, Msg: "empty command list for script"}
	}
	if err := p.linkConditionals(); err != nil {
		return nil, err
	}
	if err := p.checkPipelines(); err != nil {
		return nil, err
	}
	return &Script{Name: file, Weight: 1, Commands: p.commands}, nil
}
