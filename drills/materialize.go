package drills

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/firedrill/firedrill/scenario"
)

// Materialize writes the drill's folder into dir (which must exist) so
// that the variant's scenario finds its scripts and SQL next to it, and
// returns the scenario file's path. With quick, the scenario's times are
// scaled by Quick.TimeScale; the file keeps its layout and comments, with
// a first line saying so.
func (d Drill) Materialize(variant, dir string, quick bool) (string, error) {
	v, err := d.Variant(variant)
	if err != nil {
		return "", err
	}
	err = fs.WalkDir(d.files, ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(d.files, name)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("drill %s: write its files to %s: %w", d.Name, dir, err)
	}
	path := filepath.Join(dir, filepath.FromSlash(v.Scenario))
	if quick {
		data, err := fs.ReadFile(d.files, v.Scenario)
		if err != nil {
			return "", fmt.Errorf("drill %s: %w", d.Name, err)
		}
		scaled, err := ScaleTimes(data, d.Quick.TimeScale)
		if err != nil {
			return "", fmt.Errorf("drill %s: quick %s: %w", d.Name, v.Scenario, err)
		}
		header := fmt.Sprintf("# firedrill drill %s --quick: every time below is the full drill's × %g\n", d.Name, d.Quick.TimeScale)
		if err := os.WriteFile(path, append([]byte(header), scaled...), 0o644); err != nil {
			return "", fmt.Errorf("drill %s: %w", d.Name, err)
		}
	}
	return path, nil
}

// Load materializes the variant into dir and loads its scenario, as
// `firedrill run` would load the file (with the same opts).
func (d Drill) Load(variant, dir string, quick bool, opts scenario.Options) (*scenario.Scenario, error) {
	path, err := d.Materialize(variant, dir, quick)
	if err != nil {
		return nil, err
	}
	return scenario.Load(path, opts)
}

// ScaleTimes multiplies the times of a scenario file by factor: the
// top-level duration, each workload's start, stop and stage durations,
// each event's at and duration, and each service's timeout and
// throttle lag. Only those values change in the
// text, so comments and layout stay. Times are rounded to the
// millisecond, and the run's duration up to the next 100 ms so that
// events and workloads scaled to end with the run still fit in it.
func ScaleTimes(data []byte, factor float64) ([]byte, error) {
	if !(factor > 0) {
		return nil, fmt.Errorf("time scale %v: want a factor above 0", factor)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return data, nil
	}
	s := &scaler{factor: factor, seen: map[*yaml.Node]bool{}}
	root := resolve(doc.Content[0])
	s.mapping(root, func(key string, val *yaml.Node) {
		switch key {
		case "duration":
			s.add(val, true)
		case "workloads":
			s.each(val, func(w *yaml.Node) {
				s.mapping(w, func(key string, val *yaml.Node) {
					switch key {
					case "start", "stop":
						s.add(val, false)
					case "stages":
						s.each(val, func(st *yaml.Node) {
							s.mapping(st, func(key string, val *yaml.Node) {
								if key == "duration" {
									s.add(val, false)
								}
							})
						})
					}
				})
			})
		case "services":
			// The callers' timeout and a remote throttle's lag are times
			// of the incident: a quick drill's shorter surge must outlast
			// them as the full one does.
			s.each(val, func(sv *yaml.Node) {
				s.mapping(sv, func(key string, val *yaml.Node) {
					switch key {
					case "timeout":
						s.add(val, false)
					case "throttle":
						s.mapping(val, func(key string, val *yaml.Node) {
							if key == "lag" {
								s.add(val, false)
							}
						})
					}
				})
			})
		case "events":
			s.each(val, func(e *yaml.Node) {
				s.mapping(e, func(key string, val *yaml.Node) {
					if key == "at" || key == "duration" {
						s.add(val, false)
					}
				})
			})
		}
	})
	if s.err != nil {
		return nil, s.err
	}
	return s.apply(data)
}

// scaler collects the scalars to rewrite, in document order.
type scaler struct {
	factor float64
	seen   map[*yaml.Node]bool
	edits  []edit
	err    error
}

type edit struct {
	line, col int // 1-based; col counts characters, as yaml.v3 does
	anchor    string
	old, new  string
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mapping calls fn for each key of a mapping, merged keys (<<) included.
func (s *scaler) mapping(n *yaml.Node, fn func(key string, val *yaml.Node)) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		if key == "<<" {
			v := resolve(val)
			if v != nil && v.Kind == yaml.SequenceNode {
				for _, m := range v.Content {
					s.mapping(m, fn)
				}
			} else {
				s.mapping(v, fn)
			}
			continue
		}
		fn(key, val)
	}
}

func (s *scaler) each(n *yaml.Node, fn func(*yaml.Node)) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return
	}
	for _, item := range n.Content {
		fn(item)
	}
}

// add scales one duration scalar; roundUp rounds up to 100 ms (the run's
// duration) rather than to the nearest millisecond.
func (s *scaler) add(n *yaml.Node, roundUp bool) {
	n = resolve(n)
	if n == nil || n.Kind != yaml.ScalarNode || s.seen[n] || n.Tag == "!!null" {
		return
	}
	s.seen[n] = true
	d, err := scenario.ParseDuration(n.Value)
	if err != nil {
		// Leave it: scenario.Load reports it with its position.
		return
	}
	scaled := time.Duration(math.Round(float64(d)*s.factor/float64(time.Millisecond))) * time.Millisecond
	if roundUp {
		step := 100 * time.Millisecond
		scaled = time.Duration(math.Ceil(float64(d)*s.factor/float64(step))) * step
	}
	var old string
	switch n.Style {
	case 0:
		old = n.Value
	case yaml.DoubleQuotedStyle:
		old = `"` + n.Value + `"`
	case yaml.SingleQuotedStyle:
		old = "'" + n.Value + "'"
	default:
		s.err = fmt.Errorf("line %d: a time written as a block scalar; write it on one line", n.Line)
		return
	}
	s.edits = append(s.edits, edit{line: n.Line, col: n.Column, anchor: n.Anchor, old: old, new: scaled.String()})
}

// apply rewrites the collected scalars in the text.
func (s *scaler) apply(data []byte) ([]byte, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	// Edits on one line, from the last column back, keep the earlier
	// columns valid.
	byLine := map[int][]edit{}
	for _, e := range s.edits {
		byLine[e.line] = append(byLine[e.line], e)
	}
	for line, edits := range byLine {
		if line < 1 || line > len(lines) {
			return nil, fmt.Errorf("line %d: out of the file", line)
		}
		text := string(lines[line-1])
		sort.Slice(edits, func(i, j int) bool { return edits[i].col < edits[j].col })
		for i := len(edits) - 1; i >= 0; i-- {
			e := edits[i]
			off := byteOffset(text, e.col-1)
			if off >= 0 && e.anchor != "" && strings.HasPrefix(text[off:], "&"+e.anchor) {
				// The node's position is its anchor's: the value follows it.
				off += len("&" + e.anchor)
				for off < len(text) && (text[off] == ' ' || text[off] == '\t') {
					off++
				}
			}
			if off < 0 || !strings.HasPrefix(text[off:], e.old) {
				return nil, fmt.Errorf("line %d col %d: expected %q there", e.line, e.col, e.old)
			}
			text = text[:off] + e.new + text[off+len(e.old):]
		}
		lines[line-1] = []byte(text)
	}
	return bytes.Join(lines, nil), nil
}

// byteOffset is the byte offset of the character at index chars of s,
// or -1 past its end.
func byteOffset(s string, chars int) int {
	off := 0
	for i := 0; i < chars; i++ {
		if off >= len(s) {
			return -1
		}
		_, size := utf8.DecodeRuneInString(s[off:])
		off += size
	}
	return off
}
