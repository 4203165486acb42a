package script

import (
	"strings"
)

// The Redis dialect: pgbench's meta-commands and expressions, unchanged,
// with one Redis command per line between them.
//
//	\set id random(1, 100000)
//	SET user::id :payload            # key "user:<id>"
//	INCRBY chat::cid:members 1       # key "chat:<cid>:members"
//	GET user::id
//	\gset cached
//
// A command line is split into arguments as redis-cli splits what is
// typed at its prompt: on spaces; "…" holds spaces and the escapes \n,
// \r, \t, \b, \a, \xHH, \" and \\; '…' holds spaces and only \'. A
// closing quote must be followed by a space or the end of the line.
//
// A :name (letters, digits, '_', starting with a letter or '_') is
// replaced by the variable's value in unquoted and double-quoted text,
// except when the colon directly follows a letter, digit or '_': that
// colon is literal, so keys such as chat:42:members need no escaping, and
// "user::id" is "user:" followed by the variable id. A colon is literal
// too in single quotes, written \: (outside quotes or inside double
// quotes), or when no name follows it. A variable that is not set when
// the command runs is an error (pgbench's SQL sends such a reference as
// written; a Redis key silently built from ":name" would only hide the
// typo).
//
// A line whose first non-blank character is '#', or that starts with
// "--", is a comment. An unquoted argument starting with a backslash and
// a letter ends the command and starts a meta-command on the same line
// ("GET k \gset v"). \gset names the variables to store the reply in —
// one for a single value (a nil reply stores ""), or one per element of
// an array reply — since a Redis reply has no column names to prefix.
// \aset and \syncpipeline have no Redis meaning and are refused.

// parseRedis reads a script in the Redis dialect.
func parseRedis(file string, src []byte, syms *Symbols) (*Script, error) {
	p := &parser{file: file, src: src, syms: syms, lexer: sqlLexer{src: src}}
	for i, c := range src {
		if c == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	if err := p.parseRedisScript(); err != nil {
		return nil, err
	}
	return &Script{Name: file, Weight: 1, Commands: p.commands}, nil
}

func (p *parser) parseRedisScript() error {
	s := p.src
	for p.lexer.off < len(s) {
		i := p.lexer.off
		for i < len(s) && isRedisSpace(s[i]) {
			i++
		}
		switch {
		case i >= len(s):
			p.lexer.off = i
		case s[i] == '\n':
			p.lexer.off = i + 1
		case s[i] == '#' || (s[i] == '-' && byteAt(s, i+1) == '-'):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			p.lexer.off = i
		case s[i] == '\\':
			p.lexer.off = i + 1
			if err := p.redisMeta(i); err != nil {
				return err
			}
		default:
			if err := p.redisLine(i); err != nil {
				return err
			}
		}
	}
	if len(p.commands) == 0 {
		return &Error{Pos: Pos{File: p.file, Line: 1, Col: 1}, Msg: "empty command list for script"}
	}
	if err := p.linkConditionals(); err != nil {
		return err
	}
	if err := p.checkPipelines(); err != nil {
		return err
	}
	return p.checkRedisGsets()
}

// redisMeta parses the meta-command whose backslash is at offset at; the
// lexer is just past the backslash.
func (p *parser) redisMeta(at int) error {
	save := p.lexer.off
	name, ok := p.word()
	p.lexer.off = save
	if ok && isASCII(name.text) {
		switch strings.ToLower(name.text) {
		case "gset":
			return p.redisGset(at)
		case "aset":
			return p.errorf(at, "\\aset has no meaning in a Redis script: use \\gset with a variable for each element of the reply")
		case "syncpipeline":
			return p.errorf(at, "\\syncpipeline has no meaning in a Redis script: a pipeline's replies are all read at \\endpipeline")
		}
	}
	return p.backslash(at)
}

// redisGset attaches \gset's variables to the Redis command before it.
func (p *parser) redisGset(at int) error {
	name, _ := p.word()
	var names []word
	for {
		w, ok := p.word()
		if !ok {
			break
		}
		if len(names)+1 >= maxMetaWords {
			return p.errorf(w.off, "too many arguments in command %q", name.text)
		}
		names = append(names, w)
	}
	if len(names) == 0 {
		return p.errorf(at, "missing variable name in command %q: a Redis reply has no column names, so \\gset names the variable to store it in (one per element of an array reply)", name.text)
	}
	if len(p.commands) == 0 {
		return p.errorf(at, "\\%s must follow a Redis command", name.text)
	}
	prev := p.commands[len(p.commands)-1]
	if prev.Kind != KindRedis {
		return p.errorf(at, "\\%s must follow a Redis command (the command before it is %q at line %d)", name.text, prev.Text, prev.Pos.Line)
	}
	if prev.Redis.Gset != nil {
		return p.errorf(at, "\\%s must follow a Redis command (%q already has a \\gset)", name.text, prev.Text)
	}
	refs := make([]VarRef, len(names))
	for i, w := range names {
		if !validVarName(w.text) {
			return p.errorf(w.off, "invalid variable name %q in command %q", w.text, name.text)
		}
		refs[i] = p.syms.Ref(w.text)
	}
	prev.Redis.Gset = refs
	if p.gsets == nil {
		p.gsets = make(map[int]word)
	}
	p.gsets[len(p.commands)-1] = word{text: name.text, off: at}
	return nil
}

// checkRedisGsets refuses a \gset inside a pipeline, whose reply is only
// read at \endpipeline, after the commands that would use it. Pipelines
// opened inside \if branches are left to the run-time check, as
// checkPipelines leaves them.
func (p *parser) checkRedisGsets() error {
	depth := 0
	for _, cmd := range p.commands {
		switch cmd.Kind {
		case KindIf:
			depth++
		case KindEndif:
			depth--
		case KindStartPipeline, KindEndPipeline:
			if depth > 0 {
				return nil
			}
		}
	}
	var open *Command
	for i, cmd := range p.commands {
		switch cmd.Kind {
		case KindStartPipeline:
			open = cmd
		case KindEndPipeline:
			open = nil
		case KindRedis:
			if g, ok := p.gsets[i]; ok && open != nil {
				return p.errorf(g.off, "\\%s is not allowed in pipeline mode (pipeline started at line %d): its reply is read only at \\endpipeline", g.text, open.Pos.Line)
			}
		}
	}
	return nil
}

// redisLine parses the command line starting at offset at, and a
// meta-command that follows it on the same line.
func (p *parser) redisLine(at int) error {
	s := p.src
	rc := &RedisCommand{}
	i, meta := at, -1
	for {
		for i < len(s) && isRedisSpace(s[i]) {
			i++
		}
		if i >= len(s) || s[i] == '\n' {
			break
		}
		if s[i] == '\\' && isASCIILetter(byteAt(s, i+1)) {
			meta = i
			break
		}
		arg, end, err := p.redisArg(i)
		if err != nil {
			return err
		}
		rc.Args = append(rc.Args, arg)
		i = end
	}
	text := string(s[at:i])
	text = strings.TrimRight(text, " \t\r\f\v")
	if len(text) > maxSQLTextLen {
		text = text[:maxSQLTextLen]
	}
	if rc.Args[0].Parts == nil {
		if !validRedisCommandName(rc.Args[0].Literal) {
			return p.errorf(at, "%s", redisCommandNameError(rc.Args[0].Literal))
		}
		rc.Name = strings.ToUpper(rc.Args[0].Literal)
	}
	cmd := p.newCommand(KindRedis, at)
	cmd.Text = text
	cmd.Redis = rc
	p.commands = append(p.commands, cmd)
	if meta >= 0 {
		p.lexer.off = meta + 1
		return p.redisMeta(meta)
	}
	if i < len(s) {
		i++ // the newline
	}
	p.lexer.off = i
	return nil
}

// redisArg lexes the argument starting at offset i, returning it and the
// offset after it.
func (p *parser) redisArg(i int) (RedisArg, int, error) {
	s := p.src
	var lit []byte
	var parts []Arg
	flush := func() {
		if len(lit) > 0 {
			parts = append(parts, Arg{Text: string(lit), Var: NoVar})
			lit = lit[:0]
		}
	}
	variable := func(at int) int {
		n := redisVarLen(s, at)
		if n > 0 {
			flush()
			parts = append(parts, Arg{Text: string(s[at : at+n]), Var: p.syms.Ref(string(s[at+1 : at+n]))})
		}
		return n
	}
	for i < len(s) && !isWordSpace(s[i]) {
		switch c := s[i]; c {
		case '"':
			open := i
			i++
			for {
				if i >= len(s) || s[i] == '\n' {
					return RedisArg{}, 0, p.errorf(open, "unterminated quoted string: the double quote opened here is not closed on its line")
				}
				c := s[i]
				if c == '"' {
					i++
					break
				}
				if c == '\\' && i+1 < len(s) && s[i+1] != '\n' {
					if s[i+1] == 'x' && isHexDigit(byteAt(s, i+2)) && isHexDigit(byteAt(s, i+3)) {
						lit = append(lit, hexValue(s[i+2])<<4|hexValue(s[i+3]))
						i += 4
						continue
					}
					lit = append(lit, redisEscape(s[i+1]))
					i += 2
					continue
				}
				if c == ':' {
					if n := variable(i); n > 0 {
						i += n
						continue
					}
				}
				lit = append(lit, c)
				i++
			}
			if err := p.afterQuote(i); err != nil {
				return RedisArg{}, 0, err
			}
		case '\'':
			open := i
			i++
			for {
				if i >= len(s) || s[i] == '\n' {
					return RedisArg{}, 0, p.errorf(open, "unterminated quoted string: the single quote opened here is not closed on its line")
				}
				c := s[i]
				if c == '\'' {
					i++
					break
				}
				if c == '\\' && byteAt(s, i+1) == '\'' {
					lit = append(lit, '\'')
					i += 2
					continue
				}
				lit = append(lit, c)
				i++
			}
			if err := p.afterQuote(i); err != nil {
				return RedisArg{}, 0, err
			}
		case '\\':
			if byteAt(s, i+1) == ':' {
				lit = append(lit, ':')
				i += 2
				continue
			}
			lit = append(lit, c)
			i++
		case ':':
			if n := variable(i); n > 0 {
				i += n
				continue
			}
			lit = append(lit, c)
			i++
		default:
			lit = append(lit, c)
			i++
		}
	}
	if parts == nil {
		return RedisArg{Literal: string(lit)}, i, nil
	}
	flush()
	return RedisArg{Parts: parts}, i, nil
}

// afterQuote checks that a closing quote, ending just before i, is
// followed by a space or the end of the line, as redis-cli requires.
func (p *parser) afterQuote(i int) error {
	if i < len(p.src) && !isWordSpace(p.src[i]) {
		return p.errorf(i, "a closing quote must be followed by a space or the end of the line (as in redis-cli)")
	}
	return nil
}

// redisVarLen is the length of the variable reference at the ':' at i, or
// 0 when that colon is literal: no name follows, or it directly follows a
// name character.
func redisVarLen(s []byte, i int) int {
	if i > 0 && isVarChar(s[i-1]) {
		return 0
	}
	if !isIdentStart(byteAt(s, i+1)) {
		return 0
	}
	j := i + 2
	for j < len(s) && isVarChar(s[j]) {
		j++
	}
	return j - i
}

// redisEscape is the byte a backslash escape stands for in a double-quoted
// argument, as in redis-cli: \n \r \t \b \a, else the byte itself.
func redisEscape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}

func isHexDigit(c byte) bool {
	return isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f'
}

func hexValue(c byte) byte {
	if isDigit(c) {
		return c - '0'
	}
	return (c | 0x20) - 'a' + 10
}

func isRedisSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

// Append appends the argument's value to buf, its variables replaced by
// their text, allocating nothing beyond growing buf. unset is the first
// variable that has no value (NoVar when all do); buf is then incomplete.
func (a *RedisArg) Append(buf []byte, vars *Vars) (out []byte, unset VarRef) {
	if a.Parts == nil {
		return append(buf, a.Literal...), NoVar
	}
	for i := range a.Parts {
		part := &a.Parts[i]
		if part.Var == NoVar {
			buf = append(buf, part.Text...)
			continue
		}
		var ok bool
		if buf, ok = vars.AppendText(buf, part.Var); !ok {
			return buf, part.Var
		}
	}
	return buf, NoVar
}
