package scenario

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// RedactedSource returns the scenario file's text with the value of
// target.dsn replaced by redact(value), for the copy kept in a run
// directory: every other byte is as written. When redact leaves the
// value as it is, so is the text. A value written in a way this cannot
// cut out exactly (a block or multi-line scalar) has redact applied to
// the text from the value to the next key instead.
func (s *Scenario) RedactedSource(redact func(string) string) []byte {
	src := s.Source
	nodes := dsnNodes(src)
	// The last value first, so that the offsets of the others hold.
	for i := len(nodes) - 1; i >= 0; i-- {
		src = redactValue(src, nodes[i], redact)
	}
	return src
}

// redactValue masks one scalar value of src.
func redactValue(src []byte, node *yaml.Node, redact func(string) string) []byte {
	if redact(node.Value) == node.Value {
		return src
	}
	start, ok := offsetOf(src, node.Line, node.Column)
	if !ok {
		return []byte(redact(string(src)))
	}
	end, exact := scalarEnd(src, start, node)
	if !exact {
		out := bytes.Clone(src[:start])
		out = append(out, redact(string(src[start:end]))...)
		return append(out, src[end:]...)
	}
	quoted, _ := json.Marshal(redact(node.Value)) // a JSON string is a YAML double-quoted scalar
	out := bytes.Clone(src[:start])
	out = append(out, quoted...)
	return append(out, src[end:]...)
}

// dsnNodes finds the value nodes of target.dsn and of each targets.NAME.dsn
// (and a service's url and headers), and the workloads' inline scripts,
// in the file's order.
func dsnNodes(src []byte) []*yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(src, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	var targets []*yaml.Node
	if t := mappingValue(doc.Content[0], "target"); t != nil {
		targets = append(targets, t)
	}
	if m := mappingValue(doc.Content[0], "targets"); m != nil && m.Kind == yaml.MappingNode {
		for i := 1; i < len(m.Content); i += 2 {
			targets = append(targets, m.Content[i])
		}
	}
	var out []*yaml.Node
	for _, t := range targets {
		for _, key := range []string{"dsn", "url"} {
			if v := mappingValue(t, key); v != nil && v.Kind == yaml.ScalarNode {
				out = append(out, v)
			}
		}
		// A service's headers are secrets (the redactor learned them).
		if h := mappingValue(t, "headers"); h != nil && h.Kind == yaml.MappingNode {
			for i := 1; i < len(h.Content); i += 2 {
				if h.Content[i].Kind == yaml.ScalarNode {
					out = append(out, h.Content[i])
				}
			}
		}
	}
	// Inline scripts may hold what the redactor learned from them (an
	// HTTP script's Authorization header).
	if ws := mappingValue(doc.Content[0], "workloads"); ws != nil && ws.Kind == yaml.SequenceNode {
		for _, w := range ws.Content {
			scripts := mappingValue(w, "scripts")
			if scripts == nil || scripts.Kind != yaml.SequenceNode {
				continue
			}
			for _, src := range scripts.Content {
				if v := mappingValue(src, "inline"); v != nil && v.Kind == yaml.ScalarNode {
					out = append(out, v)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Line < out[j].Line || out[i].Line == out[j].Line && out[i].Column < out[j].Column
	})
	return out
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// offsetOf turns yaml.v3's line and column (1-based, in characters)
// into a byte offset.
func offsetOf(src []byte, line, col int) (int, bool) {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	for c := 1; c < col; c++ {
		if off >= len(src) || src[off] == '\n' {
			return 0, false
		}
		_, size := utf8.DecodeRune(src[off:])
		off += size
	}
	return off, off <= len(src)
}

// scalarEnd finds where the scalar starting at src[start] ends. exact is
// false when the scalar spans lines or is a block scalar; end is then the
// start of the next key (or the end of the text).
func scalarEnd(src []byte, start int, node *yaml.Node) (end int, exact bool) {
	lineEnd := bytes.IndexByte(src[start:], '\n')
	if lineEnd < 0 {
		lineEnd = len(src)
	} else {
		lineEnd += start
	}
	line := string(src[start:lineEnd])
	switch node.Style {
	case yaml.DoubleQuotedStyle:
		for i := 1; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++
			case '"':
				return start + i + 1, true
			}
		}
	case yaml.SingleQuotedStyle:
		for i := 1; i < len(line); i++ {
			if line[i] == '\'' {
				if i+1 < len(line) && line[i+1] == '\'' {
					i++
					continue
				}
				return start + i + 1, true
			}
		}
	case 0: // plain
		text := line
		if i := strings.Index(text, " #"); i >= 0 {
			text = text[:i]
		}
		// In a flow mapping ({dsn: …, x: …}) a plain scalar ends at , or }.
		for cut := len(text); cut > 0; cut = strings.LastIndexAny(text[:cut], ",}]") {
			if candidate := strings.TrimRight(text[:cut], " \t"); candidate == node.Value {
				return start + len(candidate), true
			}
		}
	}
	return nextKeyStart(src, start), false
}

// nextKeyStart is the start of the first line after start that is not
// more indented than a key, or the end of src: where a multi-line value
// certainly ended.
func nextKeyStart(src []byte, start int) int {
	lineStart := bytes.LastIndexByte(src[:start], '\n') + 1
	indent := len(src[lineStart:start]) - len(bytes.TrimLeft(src[lineStart:start], " "))
	off := start
	for {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return len(src)
		}
		off += i + 1
		rest := src[off:]
		trimmed := bytes.TrimLeft(rest, " ")
		if len(trimmed) > 0 && trimmed[0] != '\n' && len(rest)-len(trimmed) <= indent {
			return off
		}
	}
}
