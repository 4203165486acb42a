package script

import (
	"fmt"
	"strings"
)

// Commands is the table of commands a line dialect's server knows
// (Dialect.Commands): a command line whose name is written literally and
// is not in it is refused before the run (UnknownCommands), with the
// closest known name, rather than failing every transaction.
type Commands struct {
	known map[string]bool
	names []string
}

// NewCommands makes a table of the given command names (any case).
func NewCommands(names ...string) *Commands {
	c := &Commands{known: make(map[string]bool, len(names))}
	for _, n := range names {
		n = strings.ToUpper(n)
		if !c.known[n] {
			c.known[n] = true
			c.names = append(c.names, n)
		}
	}
	return c
}

// Check says why name (upper case) is not a command of the table, or
// nil when it is. A dotted name (MODULE.COMMAND, a module's) is let
// through: modules add commands no built-in table can list.
func (c *Commands) Check(name string) error {
	if c == nil || c.known[name] || strings.Contains(name, ".") {
		return nil
	}
	if near := closestName(name, c.names); near != "" {
		return fmt.Errorf("unknown command %q; did you mean %s?", name, near)
	}
	return fmt.Errorf("unknown command %q", name)
}

// UnknownCommands lists the command lines of sc whose name, written
// literally, the dialect's server does not know (Dialect.Commands),
// each at its command's place. A dialect without a table knows every
// name.
func UnknownCommands(sc *Script, d Dialect) []*Error {
	var out []*Error
	for _, cmd := range sc.Commands {
		if cmd.Kind != KindRedis || cmd.Redis.Name == "" {
			continue
		}
		if err := d.Commands.Check(cmd.Redis.Name); err != nil {
			out = append(out, &Error{Pos: cmd.Pos, Msg: err.Error()})
		}
	}
	return out
}

// closestName is the candidate nearest word, if it is within a small
// edit distance (a third of word's length, at least 1, and less than the
// whole word: "b" is not a typo of "a"); "" when none is.
func closestName(word string, candidates []string) string {
	best, bestD := "", min(max(1, len(word)/3), len(word)-1)+1
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestD || d == bestD && best != "" && c < best {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance with adjacent transpositions.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
