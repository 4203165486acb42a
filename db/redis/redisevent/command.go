package redisevent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

// commandKind is how a scenario writes a command event: Redis's
// analogue of PostgreSQL's sql.
var commandKind = event.Kind{
	EventKind: scenario.EventKind{
		Name:    "command",
		Keys:    []string{"command"},
		Example: `{kind: command, at: 90s, command: "BGREWRITEAOF"}`,
		Decode:  decodeCommand,
	},
	Build: event.BuildWith(newCommand),
}

// commandConfig is what a command event takes.
type commandConfig struct {
	Commands [][]string // each one command's arguments, its name first
}

// Outside lists what an event would do past firedrill's keys on a given
// server (a command event's FLUSHDB, a terminate event's type: normal),
// so that the backend refuses it before the run; nil when nothing.
// lexical false leaves out what the command event's words say (the
// confined user's privileges are to hold alone): only what firedrill
// itself would do as the admin stays.
func Outside(spec scenario.Event, lexical bool) []string {
	var out []string
	switch c := spec.Config.(type) {
	case commandConfig:
		if !lexical {
			break
		}
		for _, args := range c.Commands {
			out = append(out, Reaches(Literal(args...))...)
		}
	case event.TerminateConfig[string]:
		if c.By != "" {
			out = append(out, "terminate type: "+c.By+" (the application's clients too)")
		}
	}
	return out
}

// decodeCommand reads a command line, or a list of them, as the Redis
// dialect splits a script's command lines (redis-cli's quoting); only
// literal commands: no meta-commands, no :variables.
func decodeCommand(d *scenario.EventDecoder) (any, time.Duration) {
	var c commandConfig
	d.Key("command", func(v scenario.Value) {
		c.Commands = event.DecodeItems(v, func(item scenario.Value, line string) ([]string, bool) {
			args, err := splitCommand(line)
			if err != nil {
				item.Hintf(`one Redis command per item, as redis-cli takes it: command: ["SET firedrill:k 1", "BGSAVE"]`,
					"%s: command: %s", d.What(), err)
			}
			return args, err == nil
		})
	})
	d.Need("command")
	return c, 0
}

// splitCommand reads one literal command line in the Redis dialect.
func splitCommand(line string) ([]string, error) {
	if strings.ContainsAny(line, "\n\r") {
		return nil, fmt.Errorf("%q holds a line break: give each command as its own item", line)
	}
	s, err := script.ParseDialect("command", []byte(line), script.NewSymbols(), redisdialect.Script())
	if err != nil {
		// The position is within the one line: the column is what helps.
		var se *script.Error
		if errors.As(err, &se) {
			return nil, fmt.Errorf("column %d: %s", se.Pos.Col, se.Msg)
		}
		return nil, err
	}
	if len(s.Commands) != 1 || s.Commands[0].Kind != script.KindRedis || s.Commands[0].Redis == nil {
		return nil, fmt.Errorf("%q is not one Redis command (meta-commands have no place here)", line)
	}
	var args []string
	for _, a := range s.Commands[0].Redis.Args {
		if a.Parts != nil {
			return nil, fmt.Errorf("%q uses a :variable; an event's command has none (write \\: for a literal colon)", line)
		}
		args = append(args, a.Literal)
	}
	return args, nil
}

// commandEvent runs commands one by one on its own connection.
type commandEvent struct {
	name     string
	commands [][]string
}

var (
	_ event.Event   = (*commandEvent)(nil)
	_ event.Checker = (*commandEvent)(nil)
)

func newCommand(spec scenario.Event, c commandConfig) event.Event {
	return &commandEvent{name: event.Name(spec), commands: slices.Clone(c.Commands)}
}

// Check refuses, on a given server, commands that reach past the keys
// they name (FLUSHDB, CONFIG SET …) unless --allow-outside-schema.
// Before the run (no target yet) the backend's Preflight does it
// (Outside).
func (e *commandEvent) Check(env *event.Env) error {
	t, ok := env.Backend.(*Target)
	if !ok || t == nil || !t.Given || t.AllowOutside || t.PrivilegesOnly {
		return nil
	}
	for _, args := range e.commands {
		if reaches := Reaches(Literal(args...)); len(reaches) > 0 {
			return errorf("command", e.name, fmt.Errorf("%s reaches past firedrill's keys on a given server "+
				"(pass --allow-outside-schema if that is what you want)", reaches[0]))
		}
	}
	return nil
}

// Run runs the commands in order and stops at the first error reply;
// the outcome gives each command's reply, shortened, and how long it took.
func (e *commandEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	if err := e.Check(env); err != nil {
		return "", nil, err
	}
	c, err := connectWork(ctx, env, e.name)
	if err != nil {
		return "", nil, event.Cancelled(ctx, errorf("command", e.name, err))
	}
	defer c.Close()
	detail := map[string]any{"client_name": SessionName(e.name)}
	event.Notify(started, maps.Clone(detail))
	var timings []map[string]any
	var summary []string
	for i, args := range e.commands {
		begin := time.Now()
		r, err := c.Do(ctx, args...)
		elapsed := time.Since(begin)
		what := summarize(args)
		timing := map[string]any{"command": what, "seconds": elapsed.Seconds()}
		if err != nil {
			timing["error"] = err.Error()
			timings = append(timings, timing)
			detail["commands"] = timings
			summary = append(summary, fmt.Sprintf("%s failed after %s", what, event.Took(elapsed)))
			if ctx.Err() != nil {
				return strings.Join(summary, "; "), detail, ctx.Err()
			}
			return strings.Join(summary, "; "), detail, errorf("command", e.name,
				fmt.Errorf("command %d (%s) failed after %s: %w", i+1, what, event.Took(elapsed), err))
		}
		reply := replyText(r.Text(), r.Nil, len(r.Elems))
		timing["reply"] = reply
		timings = append(timings, timing)
		detail["commands"] = timings
		summary = append(summary, fmt.Sprintf("%s → %s in %s", what, reply, event.Took(elapsed)))
	}
	return strings.Join(summary, "; "), detail, nil
}

// summarize shortens a command for outcomes: its name and first
// arguments, up to a few dozen characters.
func summarize(args []string) string {
	s := strings.Join(args, " ")
	if len(s) > 60 {
		s = s[:57] + "…"
	}
	return s
}

// replyText shortens a reply for outcomes.
func replyText(text string, isNil bool, elems int) string {
	switch {
	case isNil:
		return "(nil)"
	case elems > 0:
		return fmt.Sprintf("(%d elements)", elems)
	case len(text) > 40:
		return text[:37] + "…"
	}
	return text
}
