// Package drills holds firedrill's built-in incidents. A drill is one
// folder of this package, embedded in the binary: drill.yaml (the story,
// the variants in order, and what each must show), one scenario per
// variant, the scripts and SQL they name, and a README telling the story.
// Adding a drill is adding a folder; nothing else registers it.
//
// README.md in this directory is the reference of drill.yaml.
package drills

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// folders is every drill folder with its files; a folder counts as a
// drill when it has a drill.yaml.
//
//go:embed */*
var folders embed.FS

// MetaFile is the name of a drill's metadata file inside its folder.
const MetaFile = "drill.yaml"

// Drill is one built-in incident: its story, its variants in the order
// they run, and what each variant must show.
type Drill struct {
	Name  string `yaml:"name"`
	Title string `yaml:"title"`
	// Story is one paragraph: what happened, and what the drill shows.
	Story string `yaml:"story"`
	// Unit, when set, names what one transaction of a variant does (e.g.
	// "orders"), so that the comparison also shows Unit per second:
	// variants that batch several per transaction compare fairly.
	Unit string `yaml:"unit"`
	// Quick says how --quick shortens the drill.
	Quick Quick `yaml:"quick"`
	// Windows are named spans of a run that metric expectations and the
	// comparison table measure, in the order the table shows them.
	Windows  []Window  `yaml:"windows"`
	Variants []Variant `yaml:"variants"`

	files fs.FS // the drill's folder
}

// Quick shortens a drill for CI: every time in a variant's scenario (the
// run's duration, workload start/stop and stage durations, event at and
// duration) and every offset of a window is multiplied by TimeScale.
// Sample intervals, pool timeouts and server settings are left as they
// are.
type Quick struct {
	TimeScale float64 `yaml:"time_scale"`
}

// Window is a named span [From, To) of a run. Its ends are anchors: a
// time since the start ("10s"), "end" (the run's end), or an event's
// "NAME.start", "NAME.end" (its marks as recorded) or "NAME.due" (at +
// duration as scheduled, which stays put when the server cuts the event
// short); each may carry an offset ("long-tx.start+5s", "end-10s").
type Window struct {
	Name string `yaml:"name"`
	From string `yaml:"from"`
	To   string `yaml:"to"`
	// Note says what the window is, for the comparison table's readers.
	Note string `yaml:"note"`
}

// Variant is one way of running the drill (broken, fixed …).
type Variant struct {
	Name     string `yaml:"name"`
	Scenario string `yaml:"scenario"` // a file of the drill's folder
	Summary  string `yaml:"summary"`  // one line: what differs in this variant
	// PerTransaction is how many of the drill's Unit one transaction
	// does; default 1.
	PerTransaction int    `yaml:"per_transaction"`
	Expect         Expect `yaml:"expect"`
}

// UnitsPerTransaction is PerTransaction with its default.
func (v Variant) UnitsPerTransaction() int { return max(v.PerTransaction, 1) }

// Expect is what a variant's run must show for the drill to pass.
type Expect struct {
	// Findings are rule ids that must be reported.
	Findings []string `yaml:"findings"`
	// Absent are rule ids that must not be reported, at any severity.
	Absent []string `yaml:"absent"`
	// Allow are the rules that may be reported at warning or critical
	// without being expected, each with why; any other warning or
	// critical finding fails the variant. Info findings are always
	// allowed.
	Allow []Allowance `yaml:"allow"`
	// Metrics are conditions on measured values.
	Metrics []MetricExpect `yaml:"metrics"`
	// Events are conditions on how events ended.
	Events []EventExpect `yaml:"events"`
}

// Allowance is a rule that is right to speak in a variant but is not its
// point (lock contention on a hot set, the missing index a fixed variant
// builds halfway), with why: the drill's output says "allowed: RULE
// (because WHY)" when it reports.
type Allowance struct {
	Rule string `yaml:"rule"`
	Why  string `yaml:"why"`
}

// Allows reports whether the variant allows rule, and why.
func (e Expect) Allows(rule string) (Allowance, bool) {
	for _, a := range e.Allow {
		if a.Rule == rule {
			return a, true
		}
	}
	return Allowance{}, false
}

// EventExpect says how an event of the variant's scenario must end: with
// no error, and with an outcome that contains Outcome (e.g. "ended by the
// server" for a held transaction the server cut short).
type EventExpect struct {
	Event   string `yaml:"event"`
	Outcome string `yaml:"outcome"`
	Why     string `yaml:"why"`
}

// MetricExpect is a condition on one measured value of a run, e.g. "the
// throughput during the hold is at most 0.7 × the throughput before".
type MetricExpect struct {
	// Metric is one of Metrics (tps, p95, failed, deadlocks …).
	Metric string `yaml:"metric"`
	// Workload limits the metric to one workload; empty is all of them
	// (database metrics ignore it).
	Workload string `yaml:"workload"`
	// Window is where the metric is measured; empty is the whole run.
	Window string `yaml:"window"`
	// RelativeTo, a window, makes the value a ratio: the metric in
	// Window divided by the same metric in RelativeTo.
	RelativeTo string `yaml:"relative_to"`
	// CompareTo, another variant, divides the value by the same value
	// measured on that variant's run: "fixed keeps 1.2 × the share of its
	// throughput that broken keeps". It is skipped when that variant did
	// not run.
	CompareTo string `yaml:"compare_to"`
	// Want is the condition: an operator and a number ("<= 0.7", "== 0").
	Want string `yaml:"want"`
	// Quick replaces Want under --quick, where a shortened run may show
	// less; "skip" leaves the expectation out of quick runs.
	Quick string `yaml:"quick"`
	// Why says what the expectation proves, for the report.
	Why string `yaml:"why"`
}

// QuickSkip as MetricExpect.Quick leaves the expectation out of quick runs.
const QuickSkip = "skip"

// List returns every built-in drill, by name.
func List() []Drill {
	ds, err := load(folders)
	if err != nil {
		// The folders are compiled in and a test loads them: a broken
		// drill.yaml cannot ship.
		panic(fmt.Sprintf("drills: %v", err))
	}
	return ds
}

// Get returns the drill called name.
func Get(name string) (Drill, error) {
	var names []string
	for _, d := range List() {
		if d.Name == name {
			return d, nil
		}
		names = append(names, d.Name)
	}
	return Drill{}, fmt.Errorf("no drill %q (drills: %s)", name, strings.Join(names, ", "))
}

// Variant returns the drill's variant called name.
func (d Drill) Variant(name string) (Variant, error) {
	for _, v := range d.Variants {
		if v.Name == name {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("drill %s has no variant %q (variants: %s)", d.Name, name, strings.Join(d.VariantNames(), ", "))
}

// VariantNames lists the variants in the order they run.
func (d Drill) VariantNames() []string {
	names := make([]string, len(d.Variants))
	for i, v := range d.Variants {
		names[i] = v.Name
	}
	return names
}

// ReadFile returns a file of the drill's folder (its README.md, a script).
func (d Drill) ReadFile(name string) ([]byte, error) {
	return fs.ReadFile(d.files, name)
}

// load reads every folder of root that has a drill.yaml.
func load(root fs.FS) ([]Drill, error) {
	entries, err := fs.ReadDir(root, ".")
	if err != nil {
		return nil, err
	}
	var out []Drill
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub, err := fs.Sub(root, e.Name())
		if err != nil {
			return nil, err
		}
		data, err := fs.ReadFile(sub, MetaFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		d, err := Parse(path.Join(e.Name(), MetaFile), data)
		if err != nil {
			return nil, err
		}
		d.files = sub
		if d.Name != e.Name() {
			return nil, fmt.Errorf("%s: name %q is not the folder's name %q", path.Join(e.Name(), MetaFile), d.Name, e.Name())
		}
		if errs := d.validate(nil); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %w", path.Join(e.Name(), MetaFile), errors.Join(errs...))
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Parse decodes a drill.yaml strictly: unknown keys are errors. It does
// not check the drill (Validate does, with the folder's files).
func Parse(filename string, data []byte) (Drill, error) {
	var d Drill
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&d); err != nil {
		return Drill{}, fmt.Errorf("%s: %w", filename, err)
	}
	return d, nil
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	// ruleRE is a rule id's form, as scenario thresholds check it.
	ruleRE = regexp.MustCompile(`^[a-z0-9._-]+$`)
)

// Validate reports every problem of the drill's metadata: missing
// fields, duplicate names, unknown windows, metrics or conditions, and
// scenario files missing from its folder; ms are the metrics expectations
// may name (the kinds'). Whether the scenarios load is checked by loading
// them (Load).
func (d Drill) Validate(ms Measures) []error {
	return d.validate(&ms)
}

// validate is Validate; with ms nil it leaves out whether the metrics
// named are known, which depends on the kinds firedrill is built with
// (List checks the rest of the built-in drills without them; their tests
// check the metrics with every kind).
func (d Drill) validate(ms *Measures) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !nameRE.MatchString(d.Name) {
		bad("name %q: want lower-case letters, digits, . _ -", d.Name)
	}
	if strings.TrimSpace(d.Title) == "" {
		bad("title: missing")
	}
	if strings.TrimSpace(d.Story) == "" {
		bad("story: missing")
	}
	if s := d.Quick.TimeScale; !(s > 0 && s <= 1) {
		bad("quick.time_scale %v: want a factor above 0 and at most 1", s)
	}
	windows := map[string]bool{}
	for i, w := range d.Windows {
		what := fmt.Sprintf("windows[%d] %q", i, w.Name)
		if !nameRE.MatchString(w.Name) {
			bad("%s: name: want lower-case letters, digits, . _ -", what)
		}
		if windows[w.Name] {
			bad("%s: a second window of that name", what)
		}
		windows[w.Name] = true
		for _, a := range []struct{ key, text string }{{"from", w.From}, {"to", w.To}} {
			if _, err := parseAnchor(a.text); err != nil {
				bad("%s: %s: %v", what, a.key, err)
			}
		}
	}
	if len(d.Variants) == 0 {
		bad("variants: at least one")
	}
	variants := map[string]bool{}
	for i, v := range d.Variants {
		what := fmt.Sprintf("variants[%d] %q", i, v.Name)
		if !nameRE.MatchString(v.Name) {
			bad("%s: name: want lower-case letters, digits, . _ -", what)
		}
		if variants[v.Name] {
			bad("%s: a second variant of that name", what)
		}
		variants[v.Name] = true
		if v.PerTransaction < 0 || v.PerTransaction > 0 && d.Unit == "" {
			bad("%s: per_transaction %d: want a count ≥ 1, with the drill's unit set", what, v.PerTransaction)
		}
		if v.Scenario == "" {
			bad("%s: scenario: missing", what)
		} else if d.files != nil {
			if _, err := fs.Stat(d.files, v.Scenario); err != nil {
				bad("%s: scenario %s: not in the drill's folder", what, v.Scenario)
			}
		}
		for _, list := range []struct {
			key string
			ids []string
		}{{"findings", v.Expect.Findings}, {"absent", v.Expect.Absent}} {
			for _, id := range list.ids {
				if !ruleRE.MatchString(id) {
					bad("%s: expect.%s: %q is not a rule id", what, list.key, id)
				}
			}
		}
		for j, a := range v.Expect.Allow {
			if !ruleRE.MatchString(a.Rule) {
				bad("%s: expect.allow[%d]: rule %q is not a rule id", what, j, a.Rule)
			}
			if strings.TrimSpace(a.Why) == "" {
				bad("%s: expect.allow[%d] (%s): why: missing — say why the rule is right to speak in this variant; the drill prints it", what, j, a.Rule)
			}
		}
		for _, id := range v.Expect.Findings {
			if slices.Contains(v.Expect.Absent, id) {
				bad("%s: expect: %s is both in findings and absent", what, id)
			}
		}
		for j, e := range v.Expect.Events {
			if e.Event == "" {
				bad("%s: expect.events[%d]: event: missing", what, j)
			}
		}
		for j, m := range v.Expect.Metrics {
			mwhat := fmt.Sprintf("%s: expect.metrics[%d]", what, j)
			if _, ok := ms.lookupOrAny(m.Metric); !ok {
				bad("%s: metric %q: want one of %s", mwhat, m.Metric, strings.Join(ms.Names(), ", "))
			}
			if m.Metric == unitsPerS && d.Unit == "" {
				bad("%s: metric %s: set the drill's unit (what one transaction does) first", mwhat, unitsPerS)
			}
			for _, ref := range []struct{ key, name string }{{"window", m.Window}, {"relative_to", m.RelativeTo}} {
				if ref.name != "" && !windows[ref.name] {
					bad("%s: %s %q: no such window", mwhat, ref.key, ref.name)
				}
			}
			if m.CompareTo != "" && (m.CompareTo == v.Name || !slices.ContainsFunc(d.Variants, func(o Variant) bool { return o.Name == m.CompareTo })) {
				bad("%s: compare_to %q: want another variant of the drill", mwhat, m.CompareTo)
			}
			if _, err := parseCondition(m.Want); err != nil {
				bad("%s: want: %v", mwhat, err)
			}
			if m.Quick != "" && m.Quick != QuickSkip {
				if _, err := parseCondition(m.Quick); err != nil {
					bad("%s: quick: %v (or %q)", mwhat, err, QuickSkip)
				}
			}
		}
	}
	return errs
}
