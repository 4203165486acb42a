package promexport

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/sampler/host/hostmetric"
	"github.com/firedrill/firedrill/service/svcmetric"
)

// Namespace prefixes every metric firedrill serves.
const Namespace = "firedrill"

// Key is one value key of a sampled source, as a kind's metric leaf
// lists it (pgmetric.Keys and its kin, which convert to it): the pattern
// with its "<…>" placeholders, its unit and what it means.
type Key struct {
	Source, Key, Unit, Doc string
}

// Names are one kind's key tables, for the names of its sampled series.
// A source missing from every kind's tables is still exported, each key
// under its sanitised name without a unit (seriesFor's fallback).
type Names struct {
	Keys []Key
	// Labels names the label of the placeholders whose name in Keys is an
	// abbreviation (PostgreSQL's <N> an SLRU cache: "cache"); any other
	// placeholder's label is its own name.
	Labels map[string]string
}

// Named is a kind (a backend) whose sampled keys have names and units on
// /metrics.
type Named interface {
	MetricNames() Names
}

// hostNames are the keys of the host and of firedrill itself, which every
// run samples whatever its kind, and of the services a scenario may put
// in front of its database.
func hostNames() Names {
	var n Names
	for _, k := range hostmetric.Keys {
		n.Keys = append(n.Keys, Key(k))
	}
	for _, k := range svcmetric.Keys { // the services', which any run may have
		n.Keys = append(n.Keys, Key(k))
	}
	return n
}

// seriesName is how one sampled key is exported: the metric's name, its
// labels beyond the run's (the values of the key's placeholders), the
// factor that turns the sample's value into the metric's unit, and its
// help.
type seriesName struct {
	Name        string
	LabelNames  []string
	LabelValues []string
	Scale       float64
	Counter     bool // a count since the server started: a Prometheus counter
	Help        string
}

// namer derives series names from the key tables, remembering what it
// derived: the samples repeat the same keys every tick.
type namer struct {
	bySource map[string][]Key
	labels   map[string]string // placeholder → label, of every kind
	cache    map[[2]string]*seriesName
}

// newNamer names the series of the kinds' keys and the host's.
func newNamer(kinds []Names) *namer {
	n := &namer{bySource: map[string][]Key{}, labels: map[string]string{}, cache: map[[2]string]*seriesName{}}
	for _, names := range append(slices.Clone(kinds), hostNames()) {
		for _, k := range names.Keys {
			n.bySource[k.Source] = append(n.bySource[k.Source], k)
		}
		maps.Copy(n.labels, names.Labels)
	}
	return n
}

// series returns how source's key is exported.
func (n *namer) series(source, key string) *seriesName {
	ck := [2]string{source, key}
	if s, ok := n.cache[ck]; ok {
		return s
	}
	s := n.seriesFor(n.bySource[source], source, key)
	n.cache[ck] = s
	return s
}

// seriesFor names source's key from the source's keys: the exact key if
// listed, else the listed pattern it matches with the most literal text
// (its placeholders' values become labels), else the key itself,
// sanitised, without a unit.
func (n *namer) seriesFor(keys []Key, source, key string) *seriesName {
	var best *Key
	var bestValues []string
	bestLiteral := -1
	for i := range keys {
		k := &keys[i]
		if k.Key == key {
			best, bestValues = k, nil
			break
		}
		values, ok := matchPattern(k.Key, key)
		if !ok {
			continue
		}
		if lit := literalLen(k.Key); lit > bestLiteral {
			best, bestValues, bestLiteral = k, values, lit
		}
	}
	prefix := sourcePrefix(source)
	if best == nil {
		return &seriesName{
			Name:  prefix + "_" + sanitize(key),
			Scale: 1,
			Help:  fmt.Sprintf("%s: value key %q, not in firedrill's key tables (unit unknown)", source, key),
		}
	}
	name, scale, labels := n.keyName(*best)
	if bestValues == nil {
		// A key that is the total of a pattern's series (Redis's
		// calls_per_s beside <cmd>.calls_per_s) cannot share its name:
		// one name has one set of labels.
		for _, k := range keys {
			if k.Key != best.Key && strings.Contains(k.Key, "<") {
				if other, _, _ := n.keyName(k); other == name {
					name = "all_" + name
					break
				}
			}
		}
	}
	s := &seriesName{
		Name:  prefix + "_" + name,
		Scale: scale,
		Help:  fmt.Sprintf("%s %s (%s): %s", source, best.Key, best.Unit, best.Doc),
	}
	if best.Unit == "count" && strings.HasSuffix(name, "_total") {
		s.Counter = true
	}
	for i, l := range labels {
		s.LabelNames = append(s.LabelNames, l)
		s.LabelValues = append(s.LabelValues, strings.ToValidUTF8(bestValues[i], "\uFFFD"))
	}
	return s
}

// keyName is the name of a key pattern's series after the source's
// prefix, the factor to its unit, and its placeholders' labels.
func (n *namer) keyName(k Key) (name string, scale float64, labels []string) {
	base, labels, endsInPlaceholder := splitPattern(k.Key, n.labels)
	name, scale = withUnit(sanitize(base), k.Unit, endsInPlaceholder)
	// The source already says it: wal's wal_bytes_per_s is
	// firedrill_wal_bytes_per_second.
	if trimmed, ok := strings.CutPrefix(name, sanitize(k.Source)+"_"); ok {
		name = trimmed
	}
	return name, scale, labels
}

// sourcePrefix is the metric name prefix of a source's series:
// firedrill_<source>, and firedrill_self for firedrill's own process.
func sourcePrefix(source string) string {
	s := sanitize(source)
	if s == Namespace {
		s = "self"
	}
	return Namespace + "_" + s
}

// segment is a pattern's literal text followed by a placeholder ("" for
// the last segment).
type segment struct{ literal, placeholder string }

// parsePattern splits a key pattern ("wait.<type>:<event>") into
// segments; ok is false if it has no placeholder.
func parsePattern(pattern string) (segs []segment, ok bool) {
	rest := pattern
	for {
		open := strings.IndexByte(rest, '<')
		if open < 0 {
			segs = append(segs, segment{literal: rest})
			return segs, len(segs) > 1
		}
		closeAt := strings.IndexByte(rest[open:], '>')
		if closeAt < 0 {
			return nil, false
		}
		segs = append(segs, segment{literal: rest[:open], placeholder: rest[open+1 : open+closeAt]})
		rest = rest[open+closeAt+1:]
	}
}

// matchPattern matches key against a pattern with placeholders and
// returns the placeholders' values. Each value is non-empty; the last
// placeholder takes everything up to the pattern's final literal (a
// table "<schema>.<table>" keeps its dot), the others end at the first
// occurrence of the literal after them.
func matchPattern(pattern, key string) ([]string, bool) {
	segs, ok := parsePattern(pattern)
	if !ok {
		return nil, false
	}
	rest, ok := strings.CutPrefix(key, segs[0].literal)
	if !ok {
		return nil, false
	}
	var values []string
	for i := 0; i < len(segs)-1; i++ {
		next := segs[i+1].literal
		if i == len(segs)-2 { // the last placeholder: anchored at the end
			if len(rest) <= len(next) || !strings.HasSuffix(rest, next) {
				return nil, false
			}
			values = append(values, rest[:len(rest)-len(next)])
			return values, true
		}
		if next == "" || rest == "" {
			return nil, false // two placeholders in a row cannot be told apart; a value is not empty
		}
		at := strings.Index(rest[1:], next)
		if at < 0 {
			return nil, false
		}
		values = append(values, rest[:at+1])
		rest = rest[at+1+len(next):]
	}
	return values, true
}

// literalLen is how much of a pattern is literal text.
func literalLen(pattern string) int {
	segs, _ := parsePattern(pattern)
	n := 0
	for _, s := range segs {
		n += len(s.literal)
	}
	return n
}

// splitPattern returns a key pattern's name (its literal parts), the
// labels of its placeholders, and whether it ends in a placeholder (so
// its name is a prefix such as "wait" that needs its unit to read well).
// placeholderLabels names the labels of abbreviated placeholders
// (Names.Labels).
func splitPattern(pattern string, placeholderLabels map[string]string) (base string, labels []string, endsInPlaceholder bool) {
	segs, ok := parsePattern(pattern)
	if !ok {
		return pattern, nil, false
	}
	var parts []string
	for _, s := range segs {
		if s.literal != "" {
			parts = append(parts, s.literal)
		}
		if s.placeholder != "" {
			l, ok := placeholderLabels[s.placeholder]
			if !ok {
				l = sanitize(s.placeholder)
			}
			labels = append(labels, l)
		}
	}
	return strings.Join(parts, "_"), labels, segs[len(segs)-1].literal == ""
}

// countNouns are units that count things: they stay out of a name that
// already says what it counts, and are appended to one that does not (a
// pattern ending in a placeholder: "wait.<type>:<event>" → wait_sessions).
var countNouns = map[string]bool{"sessions": true, "pairs": true, "xids": true, "mxids": true, "rows": true,
	"buffers": true, "clients": true, "requests": true}

// withUnit puts a key's unit into its sanitised name as Prometheus's
// conventions want (base units: seconds, bytes, ratios; "_per_second"
// for rates) and returns the factor that converts the sampled value.
func withUnit(name, unit string, endsInPlaceholder bool) (string, float64) {
	tokens := strings.Split(name, "_")
	last := func() string { return tokens[len(tokens)-1] }
	has := func(t string) bool {
		for _, x := range tokens {
			if x == t {
				return true
			}
		}
		return false
	}
	// replaceLast replaces the last token in from with to; false if none.
	replaceLast := func(to string, from ...string) bool {
		for i := len(tokens) - 1; i >= 0; i-- {
			for _, f := range from {
				if tokens[i] == f && !(f == "s" && i > 0 && tokens[i-1] == "per") {
					tokens[i] = to
					return true
				}
			}
		}
		return false
	}
	perSecond := func() {
		switch n := len(tokens); {
		case n >= 2 && tokens[n-2] == "per" && (tokens[n-1] == "s" || tokens[n-1] == "sec"):
			tokens[n-1] = "second"
		case last() == "kbps":
			tokens = append(tokens[:n-1], "bytes", "per", "second")
		default:
			tokens = append(tokens, "per", "second")
		}
	}
	scale := 1.0
	switch {
	case unit == "s":
		if !replaceLast("seconds", "s") {
			tokens = append(tokens, "seconds")
		}
	case unit == "ms":
		scale = 1e-3
		if !replaceLast("seconds", "ms") {
			tokens = append(tokens, "seconds")
		}
	case unit == "µs":
		scale = 1e-6
		if !replaceLast("seconds", "usec", "us") {
			tokens = append(tokens, "seconds")
		}
	case unit == "ms/s":
		scale = 1e-3
		replaceLast("seconds", "ms")
		perSecond()
	case unit == "%":
		scale = 0.01
		tokens = append(tokens, "ratio")
	case unit == "0..1":
		switch last() {
		case "rate": // cache_hit_rate → cache_hit_ratio
			tokens[len(tokens)-1] = "ratio"
		case "util":
			tokens = append(tokens, "ratio")
		}
	case unit == "KB/s":
		scale = 1024
		perSecond()
	case strings.HasSuffix(unit, "/s"):
		if unit == "bytes/s" && !has("bytes") {
			// written_per_s → written_bytes_per_second
			if n := len(tokens); n >= 2 && tokens[n-2] == "per" {
				tokens = append(tokens[:n-2], "bytes", tokens[n-2], tokens[n-1])
			} else {
				tokens = append(tokens, "bytes")
			}
		}
		perSecond()
	case unit == "bytes":
		if !has("bytes") {
			tokens = append(tokens, "bytes")
		}
	case unit == "cores":
		if !has("cores") {
			tokens = append(tokens, "cores")
		}
	case countNouns[unit] && endsInPlaceholder && !has(unit):
		tokens = append(tokens, unit)
	}
	return strings.Join(tokens, "_"), scale
}

// sanitize turns text into a Prometheus name part: lower case, [a-z0-9_],
// no doubled or edge underscores.
func sanitize(s string) string {
	var b strings.Builder
	underscore := true // drops leading underscores
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			underscore = false
		case !underscore:
			b.WriteByte('_')
			underscore = true
		}
	}
	out := strings.TrimRight(b.String(), "_")
	if out == "" || (out[0] >= '0' && out[0] <= '9') {
		out = "x_" + out
	}
	return out
}
