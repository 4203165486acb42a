package timeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
)

// streamSummaryCommands is the number of script commands from which
// WriteSummary streams summary.json instead of encoding it whole.
const streamSummaryCommands = 10_000

// WriteSummary writes sum to the run directory's summary.json. A summary
// of many script commands (a long script's) is written to the file one
// command at a time, compact: encoding/json builds a whole value in
// memory before writing it, which for 100,000 commands was ~40 MB of
// buffer on top of the summary itself (issue 14). A smaller one is
// written as WriteJSON writes it.
func WriteSummary(dir string, sum *Summary) error {
	n := 0
	for _, w := range sum.Workloads {
		for _, s := range w.Scripts {
			n += len(s.Commands)
		}
	}
	if n < streamSummaryCommands {
		return WriteJSON(dir, SummaryFile, sum)
	}
	return writeFileWith(dir, SummaryFile, func(f io.Writer) error {
		w := bufio.NewWriterSize(f, 64<<10)
		if err := streamSummary(w, sum); err != nil {
			return err
		}
		return w.Flush()
	})
}

// commandsHole is where a script's commands go in the summary encoded
// without them. It cannot occur inside an encoded string, whose quotes
// are escaped, and no other field is named "commands".
var commandsHole = []byte(`"commands":null`)

// streamSummary writes sum as JSON: the summary without its commands,
// encoded at once (small), with each script's commands streamed into
// their place, one encoding per command.
func streamSummary(w io.Writer, sum *Summary) error {
	shallow := *sum
	shallow.Workloads = slices.Clone(sum.Workloads)
	var commands [][]CommandSummary
	for i := range shallow.Workloads {
		ws := &shallow.Workloads[i]
		ws.Scripts = slices.Clone(ws.Scripts)
		for j := range ws.Scripts {
			commands = append(commands, ws.Scripts[j].Commands)
			ws.Scripts[j].Commands = nil
		}
	}
	rest, err := json.Marshal(&shallow)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w) // each command on its own line
	for _, cmds := range commands {
		i := bytes.Index(rest, commandsHole)
		if i < 0 {
			return errors.New("encode summary: a script's commands have no place") // cannot happen: one hole per script
		}
		if _, err := w.Write(rest[:i+len(`"commands":`)]); err != nil {
			return err
		}
		rest = rest[i+len(commandsHole):]
		if cmds == nil {
			if _, err := io.WriteString(w, "null"); err != nil {
				return err
			}
			continue
		}
		if _, err := io.WriteString(w, "[\n"); err != nil {
			return err
		}
		for k := range cmds {
			if k > 0 {
				if _, err := io.WriteString(w, ","); err != nil {
					return err
				}
			}
			if err := enc.Encode(&cmds[k]); err != nil {
				return err
			}
		}
		if _, err := io.WriteString(w, "]"); err != nil {
			return err
		}
	}
	if _, err := w.Write(rest); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}
