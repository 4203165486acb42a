package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder walks the YAML node tree by hand, rather than unmarshalling into
// tagged structs, so that every value keeps its line and column and every
// problem is collected instead of the first one ending the decoding.
type decoder struct {
	file  string
	lines []string // the source, for mapping inline scripts' positions
	// x is the source with its variables expanded, which the YAML is
	// decoded from; it places positions back in the source.
	x *expansion
	// overrides are the --set values applied to the tree (setPos).
	overrides []Override
	errs      Errors
	// budget bounds the keys visited, so that merge keys nested through
	// aliases (each doubling the last) cannot make decoding exponential.
	budget int
}

// maxKeysVisited is the decoder's budget: far above any real scenario.
const maxKeysVisited = 20000

// pos is where a node is.
func pos(n *yaml.Node) Pos {
	if p, ok := setPos(n); ok {
		return p
	}
	return Pos{Line: n.Line, Col: n.Column}
}

// report records a problem at a position.
func (d *decoder) report(p Pos, hint, format string, args ...any) {
	file := d.file
	if arg, ok := d.setArg(p); ok {
		file, p = "--set "+arg, Pos{}
	}
	d.errs = append(d.errs, &Error{File: file, Pos: p, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

// errorf records a problem at a node.
func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.report(pos(n), "", format, args...)
}

// hintf records a problem at a node, with what to do about it.
func (d *decoder) hintf(n *yaml.Node, hint, format string, args ...any) {
	d.report(pos(n), hint, format, args...)
}

// deref follows aliases to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// isNull reports whether a value is YAML's null (an empty value, ~ or
// null): the loader treats such a key as absent.
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %s", quoteShort(n.Value))
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("a value tagged %s", n.Tag)
	}
	return "an unexpected node"
}

// quoteShort quotes a user's value for a message, shortened when long.
func quoteShort(s string) string {
	if r := []rune(s); len(r) > 40 {
		s = string(r[:37]) + "..."
	}
	return strconv.Quote(s)
}

// entry is one key of a mapping with its value.
type entry struct {
	key, val *yaml.Node
	// bad says the value was reported as wrong, so that checks of what it
	// means do not pile more errors on the same mistake.
	bad bool
}

// entries lists a mapping's keys in order, with YAML merge keys ("<<:
// *defaults") expanded: keys written in the mapping win over merged ones,
// and earlier merged mappings over later ones. Duplicate keys and
// non-string keys are reported.
func (d *decoder) entries(n *yaml.Node) []entry {
	d.budget -= len(n.Content) / 2
	if d.budget < 0 {
		if d.budget+len(n.Content)/2 >= 0 {
			d.hintf(n, "use fewer nested aliases and merge keys", "the file expands to more than %d keys", maxKeysVisited)
		}
		return nil
	}
	var out []entry
	seen := make(map[string]*yaml.Node)
	var merged []entry
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := deref(n.Content[i]), n.Content[i+1]
		if key.Kind != yaml.ScalarNode {
			d.hintf(key, "keys are names, as in name: value", "a key cannot be %s", describe(key))
			continue
		}
		if key.ShortTag() == "!!merge" {
			merged = append(merged, d.mergeEntries(val, map[*yaml.Node]bool{n: true})...)
			continue
		}
		if first, dup := seen[key.Value]; dup {
			d.errorf(key, "duplicate key %q (first at line %d)", key.Value, first.Line)
			continue
		}
		seen[key.Value] = key
		out = append(out, entry{key: key, val: val})
	}
	for _, e := range merged {
		if _, dup := seen[e.key.Value]; !dup {
			seen[e.key.Value] = e.key
			out = append(out, e)
		}
	}
	return out
}

// mergeEntries lists the entries a merge key brings: one mapping or a list
// of them. visiting guards against a mapping that merges itself.
func (d *decoder) mergeEntries(val *yaml.Node, visiting map[*yaml.Node]bool) []entry {
	val = deref(val)
	var sources []*yaml.Node
	switch val.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{val}
	case yaml.SequenceNode:
		for _, s := range val.Content {
			sources = append(sources, deref(s))
		}
	}
	var out []entry
	for _, src := range sources {
		if src.Kind != yaml.MappingNode {
			d.hintf(src, "as in <<: *defaults", "a merge key (<<) takes a mapping or a list of mappings, not %s", describe(src))
			continue
		}
		if visiting[src] {
			d.errorf(src, "a merge key (<<) includes the mapping it is in")
			continue
		}
		visiting[src] = true
		out = append(out, d.entries(src)...)
		delete(visiting, src)
	}
	return out
}

// field is one known key of a mapping and how to decode its value.
type field struct {
	name   string
	decode func(val *yaml.Node)
}

// fields decodes a mapping with a fixed set of keys: unknown keys are
// reported (with the closest known key), null values are skipped as if the
// key were absent, and the keys present are returned (null ones included)
// for required-field checks. what names the mapping in messages.
func (d *decoder) fields(n *yaml.Node, what string, known []field) map[string]entry {
	return d.fieldsExt(n, what, known, false)
}

// extensionPrefix starts the top-level keys the loader ignores, as
// docker-compose's extension fields: a place for anchors ("x-defaults:
// &defaults").
const extensionPrefix = "x-"

// fieldsExt is fields, ignoring keys that start with extensionPrefix when
// extensions is set.
func (d *decoder) fieldsExt(n *yaml.Node, what string, known []field, extensions bool) map[string]entry {
	return d.decodeFields(n, what, known, extensions, nil)
}

// decodeFields is fieldsExt, handing unknown keys to unknown instead of
// reporting them when it is set (events report them once their kind is
// known).
func (d *decoder) decodeFields(n *yaml.Node, what string, known []field, extensions bool, unknown func(entry)) map[string]entry {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s: want a mapping, got %s", what, describe(n))
		return nil
	}
	names := make([]string, len(known))
	for i, f := range known {
		names[i] = f.name
	}
	present := make(map[string]entry)
	for _, e := range d.entries(n) {
		if extensions && strings.HasPrefix(e.key.Value, extensionPrefix) {
			continue
		}
		var f *field
		for i := range known {
			if known[i].name == e.key.Value {
				f = &known[i]
				break
			}
		}
		if f == nil && unknown != nil {
			unknown(e)
			continue
		}
		if f == nil {
			mean, choices := suggest(e.key.Value, names)
			hint := ""
			if choices != "" {
				hint = "known keys of " + what + ": " + choices
			}
			d.hintf(e.key, hint, "unknown key %q%s", e.key.Value, mean)
			continue
		}
		if !isNull(e.val) {
			before := len(d.errs)
			f.decode(deref(e.val))
			e.bad = len(d.errs) > before
		}
		present[f.name] = e
	}
	return present
}

// require reports a required key that is missing or has no value.
func (d *decoder) require(mapping *yaml.Node, present map[string]entry, key, what, hint string) bool {
	e, ok := present[key]
	switch {
	case present == nil:
		return false // not a mapping: already reported
	case !ok:
		d.hintf(deref(mapping), hint, "%s: missing %s", what, key)
		return false
	case isNull(e.val):
		d.hintf(e.key, hint, "%s: %s has no value", what, key)
		return false
	}
	return true
}

// scalar checks that a node is a scalar with one of the given tags.
func (d *decoder) scalar(n *yaml.Node, key, want string, tags ...string) bool {
	if n.Kind == yaml.ScalarNode {
		tag := n.ShortTag()
		for _, t := range tags {
			if tag == t {
				return true
			}
		}
	}
	hint := ""
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!str" && want == "a string" {
		hint = fmt.Sprintf("quote it: %s: %q", key, n.Value)
	}
	d.hintf(n, hint, "%s: want %s, got %s", key, want, describe(n))
	return false
}

// str decodes a string.
func (d *decoder) str(n *yaml.Node, key string) (string, bool) {
	if !d.scalar(n, key, "a string", "!!str") {
		return "", false
	}
	return n.Value, true
}

// text decodes any scalar as its text, for settings and defines whose
// values are strings to the server but are natural to write as numbers
// or booleans.
func (d *decoder) text(n *yaml.Node, key string) (string, bool) {
	if !d.scalar(n, key, "a scalar (string, number or boolean)", "!!str", "!!int", "!!float", "!!bool") {
		return "", false
	}
	return n.Value, true
}

// integer decodes a whole number within [lo, hi].
func (d *decoder) integer(n *yaml.Node, key string, lo, hi int64) (int64, bool) {
	if !d.scalar(n, key, "a whole number", "!!int") {
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		d.errorf(n, "%s: %s is out of range", key, n.Value)
		return 0, false
	}
	if v < lo || v > hi {
		d.errorf(n, "%s: %d is out of range (%s)", key, v, rangeText(lo, hi))
		return 0, false
	}
	return v, true
}

// rangeText says what a range allows, for messages.
func rangeText(lo, hi int64) string {
	if hi == maxInt {
		return fmt.Sprintf("at least %d", lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// maxInt is the largest int, as int64, for open ranges.
const maxInt = int64(int(^uint(0) >> 1))

// number decodes a finite number (integer or not).
func (d *decoder) number(n *yaml.Node, key string) (float64, bool) {
	if !d.scalar(n, key, "a number", "!!int", "!!float") {
		return 0, false
	}
	var v float64
	if err := n.Decode(&v); err != nil || !isFinite(v) {
		d.errorf(n, "%s: want a finite number, got %s", key, n.Value)
		return 0, false
	}
	return v, true
}

// boolean decodes true or false.
func (d *decoder) boolean(n *yaml.Node, key string) (bool, bool) {
	if !d.scalar(n, key, "true or false", "!!bool") {
		return false, false
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		d.errorf(n, "%s: want true or false, got %s", key, n.Value)
		return false, false
	}
	return v, true
}

// duration decodes a duration: Go syntax or a bare number of seconds.
func (d *decoder) duration(n *yaml.Node, key string) (time.Duration, bool) {
	if !d.scalar(n, key, "a duration (such as 90s or 1m30s)", "!!str", "!!int", "!!float") {
		return 0, false
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		d.errorf(n, "%s: %v", key, err)
		return 0, false
	}
	return v, true
}

// size decodes a size in bytes.
func (d *decoder) size(n *yaml.Node, key string) (int64, bool) {
	if !d.scalar(n, key, "a size (such as 512MB or 1GiB)", "!!str", "!!int", "!!float") {
		return 0, false
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		d.errorf(n, "%s: %v", key, err)
		return 0, false
	}
	return v, true
}

// byteRate decodes a rate in bytes per second.
func (d *decoder) byteRate(n *yaml.Node, key string) (int64, bool) {
	if !d.scalar(n, key, "a rate (such as 50MB/s)", "!!str", "!!int", "!!float") {
		return 0, false
	}
	v, err := ParseByteRate(n.Value)
	if err != nil {
		d.errorf(n, "%s: %v", key, err)
		return 0, false
	}
	return v, true
}

// list returns a sequence's items; with single, a lone value stands for
// a list of one ("sql: SELECT 1").
func (d *decoder) list(n *yaml.Node, key string, single bool) []*yaml.Node {
	switch {
	case n.Kind == yaml.SequenceNode:
		items := make([]*yaml.Node, len(n.Content))
		for i, item := range n.Content {
			items[i] = deref(item)
		}
		return items
	case single && n.Kind != yaml.MappingNode:
		return []*yaml.Node{n}
	}
	d.errorf(n, "%s: want a list, got %s", key, describe(n))
	return nil
}

// stringMap decodes a mapping of names to scalar values (settings,
// defines); checkName vets each name and returns a message when it is bad.
func (d *decoder) stringMap(n *yaml.Node, key string, checkName func(string) (msg, hint string)) map[string]string {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s: want a mapping of names to values, got %s", key, describe(n))
		return nil
	}
	out := make(map[string]string)
	for _, e := range d.entries(n) {
		if msg, hint := checkName(e.key.Value); msg != "" {
			d.hintf(e.key, hint, "%s: %s", key, msg)
			continue
		}
		val := deref(e.val)
		if isNull(val) {
			d.hintf(e.key, "give it a value, quoted if it is empty: \"\"", "%s: %s has no value", key, e.key.Value)
			continue
		}
		if v, ok := d.text(val, key+"."+e.key.Value); ok {
			out[e.key.Value] = v
		}
	}
	return out
}

// settingName vets a server or session setting's name: it is spliced into
// SET and ALTER SYSTEM, so only a setting's shape is allowed.
func settingName(name string) (msg, hint string) {
	// '-' for Redis's directives (maxmemory-policy); each backend checks
	// its own names again.
	if !validName(strings.ToLower(name), "_.-") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") {
		return fmt.Sprintf("%q is not a setting name", name), "settings are names such as statement_timeout, auto_explain.log_min_duration or maxmemory-policy"
	}
	return "", ""
}

// headerName vets an HTTP header's name (RFC 9110's token).
func headerName(name string) (msg, hint string) {
	ok := name != ""
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			ok = false
		}
	}
	if !ok {
		return fmt.Sprintf("%q is not a header name", name), "header names are letters, digits and -, as in Authorization or X-Request-Id"
	}
	return "", ""
}

// variableName vets a pgbench variable's name (pgbench's
// valid_variable_name: letters, digits and underscores).
func variableName(name string) (msg, hint string) {
	if name == "" {
		return "empty variable name", ""
	}
	for _, r := range name {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80) {
			return fmt.Sprintf("%q is not a variable name", name), "variables are letters, digits and underscores, as in -D in pgbench"
		}
	}
	return "", ""
}

// validName reports whether s is non-empty lower-case ASCII letters,
// digits and the extra characters.
func validName(s, extra string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}
