package script

import (
	"bytes"
	"fmt"
)

// checkText refuses a script holding a NUL byte, in every dialect: no
// server takes one in a command's text (PostgreSQL's protocol ends a
// string at it), and a file holds one only when it is not text at all
// (a binary file named by mistake), which would otherwise be sent to the
// server as commands.
func checkText(file string, src []byte) error {
	off := bytes.IndexByte(src, 0)
	if off < 0 {
		return nil
	}
	line := bytes.Count(src[:off], []byte{'\n'}) + 1
	col := off - (bytes.LastIndexByte(src[:off], '\n') + 1) + 1
	return &Error{Pos: Pos{File: file, Line: line, Col: col},
		Msg: "a NUL byte: a script is text (is this the right file? in a Redis argument, write \"\\x00\")"}
}

// validRedisCommandName says whether name could name a Redis command:
// letters, digits and the punctuation of module commands (JSON.SET,
// FT._LIST), so that a line of binary junk is refused where it is written
// rather than sent.
func validRedisCommandName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isASCIILetter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// redisCommandNameError explains a command name validRedisCommandName refuses.
func redisCommandNameError(name string) string {
	return fmt.Sprintf("%q is not a Redis command name (a command's name is letters, digits, '.', '_' or '-'; is this a Redis script?)", name)
}
