package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/firedrill/firedrill/script"
)

// Defaults and limits of a scenario, as the README documents them.
const (
	DefaultSampleInterval = time.Second
	MinSampleInterval     = 100 * time.Millisecond
	MaxSampleInterval     = 60 * time.Second
	DefaultSchema         = "firedrill"
	DefaultMode           = "simple"
	DefaultPoolTimeout    = 30 * time.Second
	// MaxClientsPerWorkload bounds clients (and stage clients): beyond it,
	// split the run into shards.
	MaxClientsPerWorkload = 100000
)

// Modes are the protocols a workload may use, as pgbench's -M.
var Modes = []string{"simple", "extended", "prepared"}

// Load reads and checks a scenario file. Problems in its content are
// returned together as Errors; a file that cannot be read is an ordinary
// wrapped error (errors.Is(err, fs.ErrNotExist) works).
func Load(path string, opts Options) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	return Parse(path, data, opts)
}

// Parse decodes and checks a scenario read from filename: relative script
// and SQL files are found next to it, and every problem is returned at
// once as Errors. On success every defaulted field holds its default and
// Duration holds the run's length.
func Parse(filename string, data []byte, opts Options) (*Scenario, error) {
	x, errs := expandVars(filename, data, opts.LookupEnv)
	if len(errs) > 0 {
		return nil, errs.finish(filename)
	}
	d := &decoder{
		file:   filename,
		lines:  strings.Split(string(data), "\n"),
		budget: maxKeysVisited,
		x:      x,
	}
	// Source is the file as written, ${NAME} unexpanded: a variable's
	// value may be a secret, and the copy a run keeps must not hold it.
	// Positions (KeyUse, errors) are the written text's too.
	s := &Scenario{File: filename, Source: data}
	root := d.document(x.text)
	if root != nil && len(opts.Overrides) > 0 {
		root = d.applyOverrides(root, opts.Overrides)
	}
	if root != nil {
		l := &loader{decoder: d, s: s, opts: opts, scripts: make(map[string]bool)}
		l.scenario(root)
	}
	if len(d.errs) > 0 {
		if opts.Partial && root != nil {
			return s, d.errs.finish(filename)
		}
		return nil, d.errs.finish(filename)
	}
	return s, nil
}

// yamlLine finds the line in yaml.v3's messages ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// document parses the YAML into its root node, reporting syntax errors,
// an empty file and a second document.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	err := decodeNode(dec, &doc)
	d.x.place(&doc, map[*yaml.Node]bool{})
	switch {
	case err == io.EOF:
		d.hintf(&yaml.Node{Line: 1, Column: 1}, "a scenario needs at least name and workloads", "the file is empty")
		return nil
	case err != nil:
		d.yamlError(err)
		return nil
	}
	var extra yaml.Node
	err = decodeNode(dec, &extra)
	d.x.place(&extra, map[*yaml.Node]bool{})
	switch {
	case err == nil:
		d.hintf(&extra, "remove the --- line, or split the file", "a scenario file holds one YAML document; a second one starts here")
	case err != io.EOF:
		d.yamlError(err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			d.hintf(&yaml.Node{Line: 1, Column: 1}, "a scenario needs at least name and workloads", "the file is empty")
			return nil
		}
		root = root.Content[0]
	}
	if isNull(root) {
		d.hintf(root, "a scenario needs at least name and workloads", "the file is empty")
		return nil
	}
	return root
}

// decodeNode runs yaml.v3 on untrusted input: the library turns its own
// failures into errors but lets a bug in it panic, and a scenario loader
// must not crash the tool over a malformed file.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the YAML parser failed: %v", r)
		}
	}()
	return dec.Decode(n)
}

// yamlParserProblems are yaml.v3's parser (not scanner) errors, with
// hints: it prints their line 0-based and leaves out line 0, unlike
// scanner errors. The line is where the enclosing list or mapping starts,
// or where the problem is when that is the first line.
var yamlParserProblems = map[string]string{
	"did not find expected <stream-start>":   "",
	"did not find expected <document start>": "",
	"found undefined tag handle":             "",
	"did not find expected node content":     "",
	"did not find expected '-' indicator":    "check the indentation of the list",
	"did not find expected key":              "check the indentation of the mapping",
	"did not find expected ',' or ']'":       "a [list] is not closed",
	"did not find expected ',' or '}'":       "a {mapping} is not closed",
	"found duplicate %YAML directive":        "",
	"found incompatible YAML document":       "",
	"found duplicate %TAG directive":         "",
}

// yamlError turns a yaml.v3 syntax error into an Error at its line.
func (d *decoder) yamlError(err error) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	hint, parserProblem := yamlParserProblems[msg]
	if parserProblem {
		line++
	}
	line = d.x.origPos(line, 0).Line
	d.report(Pos{Line: line}, hint, "bad YAML: %s", msg)
}

// loader decodes the scenario's sections into s. Checks that need the
// whole file (a name used before its definition, the run's duration) are
// queued in later and run after the tree is decoded and defaults are set.
type loader struct {
	*decoder
	s     *Scenario
	opts  Options     // the caller's
	kinds []EventKind // the event kinds of the scenario's target
	// scriptChecks parse the workloads' scripts; they wait until the
	// target's kind, and so its dialect, is known, since workloads may
	// come before target in the file and --dsn may decide the kind.
	scriptChecks []func()
	later        []func()
	// durationSet says whether duration was given; if not, defaults
	// computes it.
	durationSet bool
	// durationGiven says duration was written, well or badly: a bad one
	// is reported itself, not as a run nothing bounds.
	durationGiven bool
	// abortSet says whether abort_on_failure was given (false turns it off).
	abortSet bool
	// scripts are the script files already parsed, so that a file shared
	// by several workloads reports its errors once.
	scripts map[string]bool
	// targetsNode is targets: when the scenario names several systems.
	targetsNode *yaml.Node
	// curTarget is the target whose keys are being decoded, for
	// KindKeys (a workload's until resolved: workloadKeyMarker).
	curTarget string
	// workloadTargets are the workloads' target: keys as written, by the
	// workload's place; badTarget the workloads whose target is wrong.
	workloadTargets map[Pos]targetWritten
	badTarget       map[Pos]bool
}

// The punctuation names may hold besides lower-case letters and digits;
// workloads leave out the dot, which separates a metric's parts
// ("oltp.p99").
const (
	scenarioNameChars = "._-"
	workloadNameChars = "_-"
	eventNameChars    = "._-"
)

// scenario decodes the top-level mapping, then fills defaults and runs the
// checks that needed all of it.
func (l *loader) scenario(root *yaml.Node) {
	s := l.s
	var thresholds, events *yaml.Node
	// targets: is read first: whether the scenario names several systems
	// decides which keys its workloads and events take.
	if r := deref(root); r.Kind == yaml.MappingNode {
		l.targetsNode = mappingValue(r, "targets")
	}
	l.workloadTargets, l.badTarget = map[Pos]targetWritten{}, map[Pos]bool{}
	present := l.fieldsExt(root, "the scenario", []field{
		{"name", func(v *yaml.Node) { s.Name, _ = l.name(v, "name", scenarioNameChars) }},
		{"description", func(v *yaml.Node) { s.Description, _ = l.str(v, "description") }},
		{"target", func(v *yaml.Node) {
			if l.several() {
				l.hintf(v, "target: is the shorthand for one system; name each in targets:", "target and targets are both given")
				return
			}
			l.target(v)
		}},
		{"targets", l.targets},
		{"setup", func(v *yaml.Node) {
			if l.several() {
				l.hintf(v, "with targets:, each target has its own: targets: {db: {kind: postgres, setup: {…}}}", "setup: goes inside a target")
				return
			}
			l.setup(v)
		}},
		{"sample_interval", func(v *yaml.Node) {
			if iv, ok := l.duration(v, "sample_interval"); ok {
				if iv < MinSampleInterval || iv > MaxSampleInterval {
					l.errorf(v, "sample_interval: %v is out of range (%v to %v)", iv, MinSampleInterval, MaxSampleInterval)
					return
				}
				s.SampleInterval = iv
			}
		}},
		{"duration", func(v *yaml.Node) {
			l.durationGiven = true
			if dur, ok := l.duration(v, "duration"); ok {
				if dur <= 0 {
					l.errorf(v, "duration: must be longer than 0s")
					return
				}
				s.Duration, l.durationSet = dur, true
			}
		}},
		{"workloads", l.workloads},
		{"services", l.services},
		// Events decode once the target's kind is known (their kinds
		// are the kind's).
		{"events", func(v *yaml.Node) { events = v }},
		{"thresholds", func(v *yaml.Node) { thresholds = v }},
		{"abort_on_failure", l.abortOnFailure},
	}, true)
	if present == nil {
		return
	}
	if l.several() {
		l.kindOfTargets()
		l.resolveWorkloadTargets()
	} else {
		ko := l.opts.kindOptions(s.Target)
		l.kinds, s.Dialect = ko.EventKinds, ko.Dialect
	}
	for _, check := range l.scriptChecks {
		check()
	}
	if events != nil {
		l.events(events)
	}
	l.require(root, present, "name", "the scenario", "as in name: my-scenario")
	if l.require(root, present, "workloads", "the scenario", "a scenario runs at least one workload") {
		if items := deref(present["workloads"].val); items.Kind == yaml.SequenceNode && len(items.Content) == 0 {
			l.hintf(items, "a scenario runs at least one workload", "workloads: the list is empty")
		}
	}
	if thresholds != nil {
		l.later = append(l.later, func() { l.thresholds(thresholds) })
	}
	l.defaults(root)
	for _, check := range l.later {
		check()
	}
}

// defaults fills what the file left out, then the run's duration.
func (l *loader) defaults(root *yaml.Node) {
	s := l.s
	if s.SampleInterval == 0 {
		s.SampleInterval = DefaultSampleInterval
	}
	if s.Setup.Schema == "" {
		s.Setup.Schema = DefaultSchema
	}
	if !l.abortSet {
		s.AbortOnFailure.Ratio, s.AbortOnFailure.For = DefaultAbortRatio, DefaultAbortFor
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		if w.Mode == "" {
			w.Mode = DefaultMode
		}
		if w.MaxTries == 0 {
			w.MaxTries = 1
		}
		if w.Scale == 0 {
			w.Scale = max(l.setupOf(w).PgbenchScale, 1)
		}
		if w.Pool > 0 && w.PoolTimeout == 0 {
			w.PoolTimeout = DefaultPoolTimeout
		}
		if w.Open() && w.Clients == 0 {
			w.Clients = w.MaxClients()
		}
	}
	if !l.durationSet {
		end, ok := s.Bounds()
		if !ok && len(s.Workloads) > 0 && !l.durationGiven {
			l.hintf(root, "set duration, or stop (or stages) on a workload", "nothing bounds the run: every workload runs until the end and no event lasts")
		}
		s.Duration = end
	}
}

// abortOnFailure decodes abort_on_failure: false (never stop), or
// {ratio, for} with the defaults for what is left out.
func (l *loader) abortOnFailure(v *yaml.Node) {
	lim := &l.s.AbortOnFailure
	lim.Pos = pos(v)
	l.abortSet = true
	if n := deref(v); n.Kind == yaml.ScalarNode {
		if on, ok := l.boolean(n, "abort_on_failure"); ok && on {
			lim.Ratio, lim.For = DefaultAbortRatio, DefaultAbortFor
		}
		return
	}
	lim.Ratio, lim.For = DefaultAbortRatio, DefaultAbortFor
	l.fields(v, "abort_on_failure", []field{
		{"ratio", func(v *yaml.Node) {
			if r, ok := l.number(v, "ratio"); ok {
				if r <= 0 || r > 1 {
					l.hintf(v, "a share above 0 and at most 1; 1 = every transaction", "ratio: %v is out of range", r)
					return
				}
				lim.Ratio = r
			}
		}},
		{"for", func(v *yaml.Node) {
			if d, ok := l.duration(v, "for"); ok {
				if d < time.Second {
					l.hintf(v, "at least 1s: failures are counted per second", "for: %v is too short", d)
					return
				}
				lim.For = d
			}
		}},
	})
}

// name decodes a name made of lower-case letters, digits and extra.
func (l *loader) name(v *yaml.Node, key, extra string) (string, bool) {
	name, ok := l.str(v, key)
	if !ok {
		return "", false
	}
	if !validName(name, extra) {
		l.hintf(v, "use lower-case letters, digits and "+charList(extra), "%s: %s is not a valid name", key, quoteShort(name))
		return name, false
	}
	return name, true
}

// charList spells out a set of punctuation for a hint.
func charList(chars string) string {
	words := map[byte]string{'.': "'.'", '_': "'_'", '-': "'-'"}
	var out []string
	for i := 0; i < len(chars); i++ {
		out = append(out, words[chars[i]])
	}
	return strings.Join(out, ", ")
}

func (l *loader) target(v *yaml.Node) {
	l.targetInto(v, &l.s.Target, "target", nil)
}

// targetInto decodes a target's mapping into t: the scenario's target:,
// or one of its targets: with extra keys of its own (setup).
func (l *loader) targetInto(v *yaml.Node, t *Target, what string, extra []field) {
	t.Pos = pos(v)
	var settings *yaml.Node
	present := l.fields(v, what, append([]field{
		{"kind", func(v *yaml.Node) {
			if kind, ok := l.str(v, "kind"); ok {
				if !validName(kind, "") {
					l.hintf(v, "a backend's name, as in kind: postgres", "kind: %s is not a kind of database", quoteShort(kind))
					return
				}
				t.Kind, t.KindPos = kind, pos(v)
			}
		}},
		{"dsn", func(v *yaml.Node) {
			if dsn, ok := l.str(v, "dsn"); ok {
				if strings.TrimSpace(dsn) == "" {
					l.hintf(v, "leave dsn out to use the embedded server", "dsn: empty")
					return
				}
				t.DSN = dsn
			}
		}},
		{"settings", func(v *yaml.Node) {
			settings = v
			l.kindKey("target.settings", v)
			t.Settings = l.stringMap(v, "settings", settingName)
		}},
		{"url", func(v *yaml.Node) {
			l.kindKey("target.url", v)
			if u, ok := l.str(v, "url"); ok {
				t.DSN = u
			}
		}},
		{"headers", func(v *yaml.Node) {
			l.kindKey("target.headers", v)
			t.Headers = l.stringMap(v, "headers", headerName)
		}},
		{"connections", func(v *yaml.Node) {
			l.kindKey("target.connections", v)
			if n, ok := l.integer(v, "connections", 1, MaxClientsPerWorkload); ok {
				t.Connections = int(n)
			}
		}},
		{"timeout", func(v *yaml.Node) {
			l.kindKey("target.timeout", v)
			t.Timeout, _ = l.positiveDuration(v, "timeout")
		}},
		{"embedded", func(v *yaml.Node) {
			l.kindKey("target.embedded", v)
			if name, ok := l.str(v, "embedded"); ok {
				t.EmbeddedName, t.EmbeddedPos = name, pos(v)
			}
		}},
		{"database", func(v *yaml.Node) {
			l.kindKey("target.database", v)
			if name, ok := l.str(v, "database"); ok {
				t.Database, t.DatabasePos = name, pos(v)
			}
		}},
	}, extra...))
	if present == nil {
		return
	}
	if present["url"].key != nil && present["dsn"].key != nil {
		l.hintf(present["url"].key, "url: is a service's dsn: keep one of them", "target has both url and dsn")
	}
	if k := present["embedded"].key; k != nil && (present["url"].key != nil || present["dsn"].key != nil) {
		l.hintf(k, "embedded: starts firedrill's own service, url: names yours: keep one of them", "target has both embedded and a url")
	}
	if k := present["database"].key; k != nil && !l.several() {
		l.hintf(k, "write the database and this target as two of targets:, the database first",
			"database: names another target, and this scenario has one")
	}
	if t.DSN != "" && settings != nil {
		l.hintf(present["settings"].key, "remove dsn to use the embedded server, or change the settings on your server",
			"target settings apply only to the embedded server, and dsn is set")
	}
}

func (l *loader) setup(v *yaml.Node) {
	l.setupInto(v, &l.s.Setup)
}

// setupInto decodes a setup mapping into st: the scenario's setup:, or
// the setup: of one of its targets:.
func (l *loader) setupInto(v *yaml.Node, st *Setup) {
	st.Pos = pos(v)
	l.fields(v, "setup", []field{
		{"pgbench", func(v *yaml.Node) {
			l.kindKey("setup.pgbench", v)
			st.PgbenchScale = 1
			l.fields(v, "setup.pgbench", []field{
				{"scale", func(v *yaml.Node) {
					if n, ok := l.integer(v, "scale", 1, math.MaxInt32); ok {
						st.PgbenchScale = int(n)
					}
				}},
			})
		}},
		{"sql", func(v *yaml.Node) {
			l.kindKey("setup.sql", v)
			for _, item := range l.list(v, "sql", true) {
				if src, ok := l.sqlSource(item); ok {
					st.SQL = append(st.SQL, src)
				}
			}
		}},
		{"keys", func(v *yaml.Node) {
			l.kindKey("setup.keys", v)
			l.setupKeys(v, &st.Keys)
		}},
		{"schema", func(v *yaml.Node) {
			l.kindKey("setup.schema", v)
			schema, ok := l.str(v, "schema")
			if !ok {
				return
			}
			if !validName(schema, "_") || schema[0] >= '0' && schema[0] <= '9' || len(schema) > 63 {
				l.hintf(v, "a lower-case SQL identifier, as in firedrill; \"public\" opts out", "schema: %s is not a schema name", quoteShort(schema))
				return
			}
			st.Schema = schema
		}},
	})
}

// sqlSource decodes one setup SQL item: a string (inline SQL) or a
// mapping with file or inline. A file must exist.
func (l *loader) sqlSource(v *yaml.Node) (SQLSource, bool) {
	src := SQLSource{Pos: pos(v)}
	switch {
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str":
		src.Inline = v.Value
	case v.Kind == yaml.MappingNode:
		var fileNode *yaml.Node
		present := l.fields(v, "a setup sql item", []field{
			{"file", func(v *yaml.Node) { src.File, _ = l.str(v, "file"); fileNode = v }},
			{"inline", func(v *yaml.Node) { src.Inline, _ = l.str(v, "inline") }},
		})
		if n := countPresent(present, "file", "inline"); n != 1 {
			l.hintf(v, "as in {file: schema.sql} or {inline: \"CREATE TABLE ...\"}", "a setup sql item needs exactly one of file or inline")
			return src, false
		}
		if fileNode != nil && src.File != "" {
			l.checkFile(fileNode, src.File, "SQL file")
		}
	default:
		l.hintf(v, "as in - {file: schema.sql} or - \"CREATE TABLE ...\"", "setup sql: want SQL text or a mapping with file or inline, got %s", describe(v))
		return src, false
	}
	if src.File == "" && strings.TrimSpace(src.Inline) == "" {
		l.errorf(v, "setup sql: empty SQL")
		return src, false
	}
	return src, true
}

// countPresent counts the keys of a mapping that are set (not null).
func countPresent(present map[string]entry, keys ...string) int {
	n := 0
	for _, k := range keys {
		if e, ok := present[k]; ok && !isNull(e.val) {
			n++
		}
	}
	return n
}

// set reports whether a key of a mapping is set (not null).
func set(present map[string]entry, key string) bool { return countPresent(present, key) == 1 }

// good reports whether a key is set to a value that decoded without
// problems, so that its meaning can be checked.
func good(present map[string]entry, key string) bool { return set(present, key) && !present[key].bad }

// checkFile reports a file the scenario names that cannot be read.
func (l *loader) checkFile(v *yaml.Node, file, what string) bool {
	path := l.s.Resolve(file)
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		l.hintf(v, "paths are relative to the scenario's directory", "%s %q not found (looked for %s)", what, file, path)
		return false
	case err != nil:
		l.errorf(v, "%s %q: %v", what, file, err)
		return false
	case !info.Mode().IsRegular():
		l.errorf(v, "%s %q is not a regular file", what, file)
		return false
	}
	l.s.Files = append(l.s.Files, FileUse{File: file, Pos: Pos{v.Line, v.Column}})
	return true
}

func (l *loader) workloads(v *yaml.Node) {
	names := make(map[string]Pos)
	for _, item := range l.list(v, "workloads", false) {
		if w, ok := l.workload(item, names); ok {
			l.s.Workloads = append(l.s.Workloads, w)
		}
	}
}

// workload decodes one workload and checks its shape and scripts.
func (l *loader) workload(v *yaml.Node, names map[string]Pos) (Workload, bool) {
	w := Workload{Pos: pos(v)}
	var scriptNodes []*yaml.Node
	var stageNodes []*yaml.Node
	var stop, start time.Duration
	var extra []field
	var fallbackNode *yaml.Node
	if l.several() {
		l.curTarget = workloadKeyMarker(w.Pos)
		defer func() { l.curTarget = "" }()
		l.workloadTargets[w.Pos] = targetWritten{at: v}
		extra = append(extra, field{"target", func(n *yaml.Node) {
			name, _ := l.str(n, "target")
			l.workloadTargets[w.Pos] = targetWritten{node: n, name: name, at: v}
		}})
	}
	present := l.fields(v, "a workload", append([]field{
		{"name", func(v *yaml.Node) {
			name, ok := l.name(v, "name", workloadNameChars)
			w.Name = name // even when wrong, to name the workload in messages
			if !ok {
				return
			}
			for _, r := range reservedWorkloadNames {
				if name == r {
					l.hintf(v, "thresholds read "+r+".* as "+r+" metrics; choose another name", "name: %q is reserved", name)
					return
				}
			}
			if first, dup := names[name]; dup {
				l.errorf(v, "duplicate workload name %q (first at line %d)", name, first.Line)
				return
			}
			names[name] = pos(v)
		}},
		{"scripts", func(v *yaml.Node) {
			for i, item := range l.list(v, "scripts", false) {
				if src, textNode, ok := l.scriptSource(item, i); ok {
					w.Scripts = append(w.Scripts, src)
					scriptNodes = append(scriptNodes, textNode)
				}
			}
		}},
		{"clients", func(v *yaml.Node) {
			if n, ok := l.integer(v, "clients", 0, MaxClientsPerWorkload); ok {
				w.Clients = int(n)
			}
		}},
		{"rate", func(v *yaml.Node) {
			if r, ok := l.number(v, "rate"); ok {
				if r < 0 {
					l.errorf(v, "rate: %v is negative", r)
					return
				}
				w.Rate = r
			}
		}},
		{"stages", func(v *yaml.Node) {
			for _, item := range l.list(v, "stages", false) {
				if st, ok := l.stage(item); ok {
					w.Stages = append(w.Stages, st)
					stageNodes = append(stageNodes, item)
				}
			}
		}},
		{"start", func(v *yaml.Node) { start, _ = l.duration(v, "start"); w.Start = start }},
		{"stop", func(v *yaml.Node) { stop, _ = l.duration(v, "stop"); w.Stop = stop }},
		{"mode", func(v *yaml.Node) { l.kindKey("workloads.mode", v); w.Mode, _ = l.oneOf(v, "mode", Modes) }},
		{"seed", func(v *yaml.Node) {
			if !l.scalar(v, "seed", "a whole number from 0", "!!int") {
				return
			}
			var seed uint64
			if err := v.Decode(&seed); err != nil {
				l.errorf(v, "seed: %s is not a whole number from 0 to %d", v.Value, uint64(math.MaxUint64))
				return
			}
			w.Seed = &seed
		}},
		{"pool", func(v *yaml.Node) {
			if n, ok := l.integer(v, "pool", 1, MaxClientsPerWorkload); ok {
				w.Pool = int(n)
			}
		}},
		{"pool_timeout", func(v *yaml.Node) { w.PoolTimeout, _ = l.positiveDuration(v, "pool_timeout") }},
		{"max_tries", func(v *yaml.Node) {
			if n, ok := l.integer(v, "max_tries", 1, math.MaxInt32); ok {
				w.MaxTries = int(n)
			}
		}},
		{"latency_limit", func(v *yaml.Node) { w.LatencyLimit, _ = l.positiveDuration(v, "latency_limit") }},
		{"defines", func(v *yaml.Node) { w.Defines = l.stringMap(v, "defines", variableName) }},
		{"scale", func(v *yaml.Node) {
			if n, ok := l.integer(v, "scale", 1, math.MaxInt32); ok {
				w.Scale = int(n)
			}
		}},
		{"settings", func(v *yaml.Node) {
			l.kindKey("workloads.settings", v)
			w.Settings = l.stringMap(v, "settings", settingName)
		}},
		{"fallback", func(v *yaml.Node) { fallbackNode = v }},
		{"service", func(v *yaml.Node) { w.Service, _ = l.str(v, "service") }},
	}, extra...))
	if present == nil {
		return w, false
	}
	what := "workload"
	if w.Name != "" {
		what = fmt.Sprintf("workload %q", w.Name)
	}
	l.require(v, present, "name", what, "as in name: oltp")
	if l.require(v, present, "scripts", what, "as in scripts: [{builtin: tpcb-like}]") && len(w.Scripts) == 0 && len(scriptNodes) == 0 {
		if items := deref(present["scripts"].val); items.Kind == yaml.SequenceNode && len(items.Content) == 0 {
			l.hintf(items, "a workload runs at least one script", "%s: scripts: the list is empty", what)
		}
	}
	l.shape(v, &w, what, present, stageNodes)
	if fallbackNode != nil {
		l.fallback(fallbackNode, &w, what)
	}
	if good(present, "stop") && (good(present, "start") || !set(present, "start")) && stop <= start {
		l.errorf(present["stop"].val, "%s: stop (%v) must be after start (%v)", what, stop, start)
	}
	if set(present, "pool_timeout") && !set(present, "pool") {
		l.hintf(present["pool_timeout"].key, "set pool, or remove pool_timeout", "%s: pool_timeout applies only with pool", what)
	}
	l.scriptChecks = append(l.scriptChecks, func() {
		dialect, ok := l.dialectOf(w.Pos)
		if !ok {
			return // its target is wrong (reported): no dialect to read it in
		}
		saved := l.s.Dialect
		l.s.Dialect = dialect
		l.checkScripts(&w, what, scriptNodes, nil)
		l.s.Dialect = saved
	})
	l.later = append(l.later, func() { l.checkWindow(&w, what, present, stageNodes) })
	l.later = append(l.later, func() { l.workloadService(&w, what, present) })
	return w, true
}

// positiveDuration decodes a duration that must be longer than zero.
func (l *loader) positiveDuration(v *yaml.Node, key string) (time.Duration, bool) {
	d, ok := l.duration(v, key)
	if ok && d <= 0 {
		l.errorf(v, "%s: must be longer than 0s", key)
		return 0, false
	}
	return d, ok
}

// oneOf decodes a string that must be one of choices.
func (l *loader) oneOf(v *yaml.Node, key string, choices []string) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
		l.errorf(v, "%s: want one of %s, got %s", key, strings.Join(choices, ", "), describe(v))
		return "", false
	}
	s := v.Value
	for _, c := range choices {
		if s == c {
			return s, true
		}
	}
	mean, _ := suggest(s, choices)
	l.hintf(v, "one of "+strings.Join(choices, ", "), "%s: unknown %s %s%s", key, key, quoteShort(s), mean)
	return "", false
}

// stage decodes one step of a ramp.
func (l *loader) stage(v *yaml.Node) (Stage, bool) {
	st := Stage{Pos: pos(v)}
	present := l.fields(v, "a stage", []field{
		{"duration", func(v *yaml.Node) { st.Duration, _ = l.duration(v, "duration") }},
		{"clients", func(v *yaml.Node) {
			if n, ok := l.integer(v, "clients", 0, MaxClientsPerWorkload); ok {
				c := int(n)
				st.Clients = &c
			}
		}},
		{"rate", func(v *yaml.Node) {
			if r, ok := l.number(v, "rate"); ok {
				if r < 0 {
					l.errorf(v, "rate: %v is negative", r)
					return
				}
				st.Rate = &r
			}
		}},
	})
	if present == nil {
		return st, false
	}
	ok := l.require(v, present, "duration", "stage", "as in {duration: 30s, clients: 16}")
	if countPresent(present, "clients", "rate") != 1 {
		l.hintf(v, "as in {duration: 30s, clients: 16} or {duration: 1m, rate: 500}", "a stage needs exactly one of clients or rate")
		ok = false
	}
	return st, ok && (st.Clients != nil || st.Rate != nil)
}

// shape checks a workload's load shape: clients (closed model), rate
// (open model, clients carry it), or stages of one kind.
func (l *loader) shape(v *yaml.Node, w *Workload, what string, present map[string]entry, stageNodes []*yaml.Node) {
	hasClients, hasRate := set(present, "clients"), set(present, "rate")
	if len(w.Stages) == 0 {
		switch {
		case set(present, "stages"):
			if items := deref(present["stages"].val); items.Kind == yaml.SequenceNode && len(items.Content) == 0 {
				l.hintf(items, "remove stages, or add one", "%s: stages: the list is empty", what)
			}
		case hasRate:
			if good(present, "rate") && w.Rate <= 0 {
				l.hintf(deref(present["rate"].val), "an open-model workload needs a rate above 0", "%s: rate must be above 0", what)
			}
			if good(present, "clients") && w.Clients < 1 {
				l.hintf(deref(present["clients"].val), "the clients that carry the rate; leave it out for the default", "%s: clients must be at least 1", what)
			}
		case hasClients:
			if good(present, "clients") && w.Clients < 1 {
				l.errorf(deref(present["clients"].val), "%s: clients must be at least 1", what)
			}
		default:
			l.hintf(v, "set clients (closed model), rate (open model) or stages", "%s has no load shape", what)
		}
		return
	}
	rateStages := w.Stages[0].Rate != nil
	for i, st := range w.Stages[1:] {
		if (st.Rate != nil) != rateStages {
			first, this := "clients", "rate"
			if rateStages {
				first, this = "rate", "clients"
			}
			l.hintf(stageNodes[i+1], "a workload's stages all set clients or all set rate",
				"%s: stage %d sets %s, but stage 1 sets %s", what, i+2, this, first)
		}
	}
	switch {
	case rateStages && good(present, "clients") && w.Clients < 1:
		l.hintf(deref(present["clients"].val), "the clients that carry the rate; leave it out for the default", "%s: clients must be at least 1", what)
	case !rateStages && hasRate:
		l.hintf(present["rate"].key, "with clients stages, clients is the starting number of clients; leave rate out",
			"%s: rate does not go with stages that set clients", what)
	}
}

// checkWindow checks a workload's start, stop and stages against the
// run's duration, once that is known.
func (l *loader) checkWindow(w *Workload, what string, present map[string]entry, stageNodes []*yaml.Node) {
	run := l.s.Duration
	if run <= 0 {
		return
	}
	if good(present, "start") && w.Start >= run {
		l.errorf(deref(present["start"].val), "%s: start (%v) is not before the end of the run (%v)", what, w.Start, run)
	}
	if good(present, "stop") && w.Stop > run {
		l.errorf(deref(present["stop"].val), "%s: stop (%v) is after the end of the run (%v)", what, w.Stop, run)
	}
	if len(w.Stages) == 0 {
		return
	}
	end := w.Start + w.StagesDuration()
	switch {
	case good(present, "stop") && end > w.Stop:
		l.hintf(stageNodes[len(stageNodes)-1], "shorten the stages or move stop", "%s: the stages end at %v, after stop (%v)", what, end, w.Stop)
	case end > run:
		l.hintf(stageNodes[len(stageNodes)-1], "shorten the stages or lengthen duration", "%s: the stages end at %v, after the end of the run (%v)", what, end, run)
	}
}

// scriptSource decodes one script of a workload: a shorthand string
// ("file.sql@9", "select-only") or a mapping. It returns the node that
// holds the script's file name or text, for errors.
func (l *loader) scriptSource(v *yaml.Node, index int) (ScriptSource, *yaml.Node, bool) {
	src := ScriptSource{Pos: pos(v), Weight: 1}
	textNode := v
	switch {
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str":
		name, weight, err := script.SplitWeight(v.Value)
		if err != nil {
			l.errorf(v, "scripts: %v", err)
			return src, v, false
		}
		src.Weight = weight
		if strings.ContainsAny(name, "./") {
			src.File = name
		} else {
			src.Builtin = name
		}
	case v.Kind == yaml.MappingNode:
		present := l.fields(v, "a script", []field{
			{"file", func(v *yaml.Node) { src.File, _ = l.str(v, "file"); textNode = v }},
			{"builtin", func(v *yaml.Node) { src.Builtin, _ = l.str(v, "builtin"); textNode = v }},
			{"inline", func(v *yaml.Node) { src.Inline, _ = l.str(v, "inline"); textNode = v }},
			{"name", func(v *yaml.Node) {
				if name, ok := l.str(v, "name"); ok {
					if strings.TrimSpace(name) == "" {
						l.errorf(v, "name: empty")
						return
					}
					src.Name = name
				}
			}},
			{"weight", func(v *yaml.Node) {
				if n, ok := l.integer(v, "weight", 0, math.MaxInt32); ok {
					src.Weight = int(n)
				}
			}},
		})
		if present == nil {
			return src, v, false
		}
		if countPresent(present, "file", "builtin", "inline") != 1 {
			l.hintf(v, "as in {file: tx.sql}, {builtin: select-only} or {inline: \"SELECT 1;\"}", "a script needs exactly one of file, builtin or inline")
			return src, v, false
		}
		if src.File == "" && src.Builtin == "" && !set(present, "inline") {
			return src, v, false // the value was the wrong type: reported
		}
	default:
		l.hintf(v, "as in - tx.sql@9, - select-only or - {inline: \"SELECT 1;\"}", "scripts: want a file name, a builtin name or a mapping, got %s", describe(v))
		return src, v, false
	}
	switch {
	case src.Builtin != "":
		info, err := script.FindBuiltin(src.Builtin)
		if err != nil {
			l.errorf(textNode, "%v", err)
			return src, textNode, false
		}
		src.Builtin = info.Name
		if src.Name == "" {
			src.Name = info.Name
		}
	case src.File != "":
		if src.Name == "" {
			src.Name = filepath.Base(src.File)
		}
	default:
		if src.Name == "" {
			src.Name = fmt.Sprintf("inline-%d", index+1)
		}
	}
	return src, textNode, true
}

func (l *loader) events(v *yaml.Node) {
	items := l.list(v, "events", false)
	if l.several() {
		l.targetEvents(items)
		return
	}
	if len(items) > 0 && len(l.kinds) == 0 {
		// A caller that loads scenarios without their events' kinds
		// (Options.EventKinds) cannot check them.
		l.hintf(v, "run it with firedrill run or validate", "events: this program takes scenarios without events")
		return
	}
	for i, item := range items {
		if e, ok := l.event(item, i); ok {
			l.s.Events = append(l.s.Events, e)
		}
	}
	l.later = append(l.later, l.checkEventNames)
}

// thresholds decodes the thresholds: metric names to a condition or a
// list of conditions, checked against the metric table.
func (l *loader) thresholds(v *yaml.Node) {
	if v.Kind != yaml.MappingNode {
		l.hintf(v, "as in thresholds: {oltp.p99: \"< 50ms\"}", "thresholds: want a mapping of metrics to conditions, got %s", describe(v))
		return
	}
	for _, e := range l.entries(v) {
		var services []string
		for _, sv := range l.s.Services {
			services = append(services, sv.Name)
		}
		metric, spec, msg, hint := lookupMetric(e.key.Value, metricScope{workloads: l.s.Workloads, targets: l.s.TargetNames(), services: services, db: l.dbMetrics})
		if msg != "" {
			l.hintf(e.key, hint, "thresholds: %s", msg)
		}
		val := deref(e.val)
		if isNull(val) {
			if msg == "" {
				l.hintf(e.key, "as in "+exampleCondition(spec.Kind), "thresholds: %s has no condition", e.key.Value)
			}
			continue
		}
		for _, cond := range l.list(val, "thresholds."+e.key.Value, true) {
			if cond.Kind != yaml.ScalarNode || cond.ShortTag() != "!!str" {
				hint := "quote the condition, as in \"== 0\""
				if cond.Kind != yaml.ScalarNode {
					hint = "as in " + exampleCondition(spec.Kind)
				}
				l.hintf(cond, hint, "thresholds: %s: want a condition, got %s", e.key.Value, describe(cond))
				continue
			}
			if msg != "" {
				continue // the metric is unknown: its condition cannot be checked
			}
			t, condMsg, condHint := parseCondition(cond.Value, spec.Kind)
			if condMsg != "" {
				l.hintf(cond, condHint, "thresholds: %s: %s", e.key.Value, condMsg)
				continue
			}
			t.Pos, t.Metric, t.Kind, t.Measure = pos(cond), metric, spec.Kind, spec.Measure
			l.s.Thresholds = append(l.s.Thresholds, t)
		}
	}
}

// dbMetrics are the kind and database metrics of a target: the named one
// of a scenario of several, the scenario's own for "".
func (l *loader) dbMetrics(target string) (string, []MetricSpec) {
	opts, t := l.opts, l.s.Target
	if target != "" {
		nt, _ := l.s.NamedTarget(target)
		opts.Kind, t = "", nt.Target // --dsn's kind is for a scenario of one
	}
	return opts.kindOf(t), opts.kindOptions(t).DBMetrics
}

// kindKey notes the use of a key whose meaning depends on the kind of
// database, for the backend to accept or refuse (Scenario.KindKeys).
func (l *loader) kindKey(key string, v *yaml.Node) {
	use := KeyUse{Key: key, Pos: pos(v), Target: l.curTarget}
	if n := deref(v); n.Kind == yaml.ScalarNode {
		use.Value = n.Value
	}
	l.s.KindKeys = append(l.s.KindKeys, use)
}
