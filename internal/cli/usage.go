package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// explainArgs wraps the argument check of every command under root so
// that a missing or extra argument is told with the command's usage, an
// example and where to read more, not cobra's bare "accepts 1 arg(s),
// received 0".
func explainArgs(root *cobra.Command) {
	for _, cmd := range root.Commands() {
		explainArgs(cmd)
		check := cmd.Args
		if check == nil {
			continue
		}
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return argsError(c, args, err)
			}
			return nil
		}
	}
}

// argsError says what is wrong with a command's arguments, by its Use
// line ("run SCENARIO.yaml", "validate SCENARIO.yaml...").
func argsError(cmd *cobra.Command, args []string, err error) error {
	want := positionals(strings.Fields(cmd.Use)[1:])
	var what string
	switch {
	case len(want) > 0 && len(args) >= countRequired(want) && (len(args) <= len(want) || strings.HasSuffix(want[len(want)-1], "...")):
		what = fmt.Sprintf("%s: %v", cmd.CommandPath(), err) // the count is right: the command's own check said what
	case len(want) == 0:
		what = fmt.Sprintf("%s takes no arguments, got %s", cmd.CommandPath(), quoteArgs(args))
	case len(args) < countRequired(want):
		missing := want[len(args):]
		what = fmt.Sprintf("%s needs %s", cmd.CommandPath(), strings.Join(missing, " "))
		if len(args) > 0 {
			what += fmt.Sprintf(" (got only %s)", quoteArgs(args))
		}
	default:
		what = fmt.Sprintf("%s takes %s, got %d arguments: %s", cmd.CommandPath(), strings.Join(want, " "), len(args), quoteArgs(args))
		if strings.HasPrefix(args[len(args)-1], "-") {
			what += " (a flag's value that starts with '-' needs --flag=value)"
		}
	}
	var b strings.Builder
	b.WriteString(what)
	fmt.Fprintf(&b, "\n\nUsage:\n  %s", cmd.UseLine())
	if cmd.Example != "" {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", cmd.Example)
	}
	fmt.Fprintf(&b, "\n\n'%s --help' explains every flag.", cmd.CommandPath())
	return &usageErr{msg: b.String()}
}

// positionals leaves out of a Use line's words the flags it shows
// ("--dsn URL", "[--schema S]"), which are no arguments.
func positionals(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "[-"):
			for !strings.HasSuffix(words[i], "]") && i+1 < len(words) {
				i++
			}
		case strings.HasPrefix(w, "-"):
			if i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && !strings.HasPrefix(words[i+1], "[") {
				i++ // the flag's value
			}
		default:
			out = append(out, w)
		}
	}
	return out
}

// usageErr is a usage problem already explained in full.
type usageErr struct{ msg string }

func (e *usageErr) Error() string { return e.msg }

// countRequired counts the arguments a Use line requires: all but
// optional ones ("[RUN_DIR]").
func countRequired(want []string) int {
	n := 0
	for _, w := range want {
		if !strings.HasPrefix(w, "[") {
			n++
		}
	}
	return n
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}
