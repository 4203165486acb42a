package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Override is one --set KEY=VALUE of the command line: a value put into
// the scenario after its file is read and before it is checked, so that
// a CI job can run one scenario at several sizes. The value is YAML ("64"
// is a number, "30s" a string, "[a, b]" a list; empty removes the key)
// (text that is not YAML, such as ">= 100", is a string) and is checked
// as if written in the file; a problem with it is reported
// at the --set argument, not at a line of the file.
type Override struct {
	Arg   string   // as typed: "workloads.oltp.clients=64"
	Path  []string // ["workloads", "oltp", "clients"]
	Value string   // "64"
}

// ParseOverride reads a --set argument: a dotted key path, '=', a value.
// In lists (workloads, events) a part of the path is an item's name or
// its index from 0; in the mappings whose keys are free names (settings,
// defines, thresholds) the rest of the path is one key, dots and all
// (target.settings.auto_explain.log_min_duration=1s).
func ParseOverride(arg string) (Override, error) {
	key, value, ok := strings.Cut(arg, "=")
	if !ok {
		return Override{}, fmt.Errorf("--set %s: want KEY=VALUE, as in --set workloads.oltp.clients=64", arg)
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return Override{}, fmt.Errorf("--set %s: no key before '='; as in --set duration=30s", arg)
	}
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if p == "" {
			return Override{}, fmt.Errorf("--set %s: the key %q has an empty part; parts are separated by single dots", arg, key)
		}
	}
	return Override{Arg: arg, Path: parts, Value: value}, nil
}

// freeKeyMappings are the keys whose values map free names (settings,
// variables, metrics) to values: below them the rest of an override's
// path is one key.
var freeKeyMappings = map[string]bool{"settings": true, "defines": true, "thresholds": true}

// setMarker starts the LineComment of the nodes an override made, followed
// by the override's place among Options.Overrides: they have no line in
// the file, and pos gives them a negative line, -(place+1), which
// decoder.report turns into an Error at the --set argument. yaml.v3
// starts every comment it reads with '#', so no node of the file carries
// the marker.
const setMarker = "\x00--set "

// setPos is where a node an override made is, or false for the file's.
func setPos(n *yaml.Node) (Pos, bool) {
	if n.Line != 0 {
		return Pos{}, false
	}
	if place, found := strings.CutPrefix(n.LineComment, setMarker); found {
		if i, err := strconv.Atoi(place); err == nil {
			return Pos{Line: -(i + 1)}, true
		}
	}
	return Pos{}, false
}

// setArg is the --set argument a position of setPos stands for, or false
// for a position in the file.
func (d *decoder) setArg(p Pos) (string, bool) {
	if i := -p.Line - 1; i >= 0 && i < len(d.overrides) {
		return d.overrides[i].Arg, true
	}
	return "", false
}

// applyOverrides puts the overrides into the document's root mapping, in
// order (a later one wins), and reports what cannot be put: a path
// through a scalar, a list item that does not exist, a value that is not
// YAML. Nodes shared through anchors are copied before they are changed,
// so an override changes only the place it names.
func (d *decoder) applyOverrides(root *yaml.Node, overrides []Override) *yaml.Node {
	d.overrides = overrides
	for i, o := range overrides {
		at := Pos{Line: -(i + 1)}
		mark := setMarker + strconv.Itoa(i)
		val, err := overrideValue(o, mark)
		if err != nil {
			d.report(at, "the value is YAML: quote it, as in --set 'name=\"x: y\"'", "the value: %v", err)
			continue
		}
		if root == nil {
			root = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		if msg, hint := setPath(&root, o.Path, o.Path, val, mark, false); msg != "" {
			d.report(at, hint, "%s", msg)
		}
	}
	return root
}

// overrideValue decodes an override's value as YAML, marked as the
// override's.
func overrideValue(o Override, mark string) (*yaml.Node, error) {
	var doc yaml.Node
	val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	switch err := yaml.Unmarshal([]byte(o.Value), &doc); {
	case err != nil && (strings.HasPrefix(o.Value, "[") || strings.HasPrefix(o.Value, "{")):
		return nil, err // meant as a list or mapping
	case err != nil:
		// Not YAML, as a threshold's ">= 100" (a folded block to YAML):
		// the text is the value, as if quoted.
		val = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: o.Value}
	case doc.Kind == yaml.DocumentNode && len(doc.Content) > 0:
		val = doc.Content[0]
	}
	markSet(val, mark, map[*yaml.Node]bool{})
	return val, nil
}

// markSet marks every node of an override's value as the override's.
func markSet(n *yaml.Node, mark string, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	n.Line, n.Column, n.LineComment = 0, 0, mark
	for _, c := range n.Content {
		markSet(c, mark, seen)
	}
	markSet(n.Alias, mark, seen)
}

// setPath puts val at path under *at, copying each node it goes through
// (so that anchored nodes other places share stay as written) and
// making the mappings that are missing. It returns a message and hint
// when the path cannot be followed; full is the whole path, for them.
// free says *at is a mapping of free names (freeKeyMappings).
func setPath(at **yaml.Node, path, full []string, val *yaml.Node, mark string, free bool) (msg, hint string) {
	n := copyNode(deref(*at))
	*at = n
	done := strings.Join(full[:len(full)-len(path)], ".")
	switch n.Kind {
	case yaml.MappingNode:
		key := path[0]
		rest := path[1:]
		if free {
			key, rest = strings.Join(path, "."), nil
		}
		slot := mappingSlot(n, key)
		if slot == nil {
			keyNode := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key, LineComment: mark}
			var v *yaml.Node
			if len(rest) > 0 {
				v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", LineComment: mark}
			}
			n.Content = append(n.Content, keyNode, v)
			slot = &n.Content[len(n.Content)-1]
		}
		if len(rest) == 0 {
			*slot = val
			return "", ""
		}
		if isNull(*slot) {
			*slot = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", LineComment: mark}
		}
		return setPath(slot, rest, full, val, mark, freeKeyMappings[key])
	case yaml.SequenceNode:
		i, msg, hint := listItem(n, path[0], done)
		if msg != "" {
			return msg, hint
		}
		if len(path) == 1 {
			n.Content[i] = val
			return "", ""
		}
		return setPath(&n.Content[i], path[1:], full, val, mark, false)
	}
	if done == "" {
		return "the scenario file is not a mapping of keys", ""
	}
	return fmt.Sprintf("%s is %s, not a mapping: it has no key %s", done, describe(n), path[0]),
		"the key path names keys of mappings (and list items by name or index), as in workloads.oltp.clients"
}

// copyNode copies a node and its list of children (not the children).
func copyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = append([]*yaml.Node(nil), n.Content...)
	return &c
}

// mappingSlot finds key in a mapping written in it, or brought by a merge
// key (<<), and returns the place of its value in the mapping itself: a
// merged key is copied into the mapping, where it wins over the merge.
func mappingSlot(n *yaml.Node, key string) **yaml.Node {
	return mergedSlot(n, key, map[*yaml.Node]bool{})
}

// mergedSlot is mappingSlot; visiting guards against a mapping that
// merges itself (x: &a {<<: *a}).
func mergedSlot(n *yaml.Node, key string, visiting map[*yaml.Node]bool) **yaml.Node {
	if visiting[n] || len(visiting) > 100 {
		return nil
	}
	visiting[n] = true
	defer delete(visiting, n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key && k.ShortTag() != "!!merge" {
			return &n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if deref(n.Content[i]).ShortTag() != "!!merge" {
			continue
		}
		var sources []*yaml.Node
		switch v := deref(n.Content[i+1]); v.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{v}
		case yaml.SequenceNode:
			sources = v.Content
		}
		for _, src := range sources {
			src = deref(src)
			if src.Kind != yaml.MappingNode {
				continue
			}
			if slot := mergedSlot(src, key, visiting); slot != nil {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, *slot)
				return &n.Content[len(n.Content)-1]
			}
		}
	}
	return nil
}

// listItem finds a list's item by its name (the value of its name key;
// an event's default name kind-N too) or its index from 0.
func listItem(list *yaml.Node, part, where string) (int, string, string) {
	var names []string
	for i, item := range list.Content {
		item = deref(item)
		if item.Kind != yaml.MappingNode {
			continue
		}
		name := ""
		if v := mappingSlot(copyNode(item), "name"); v != nil {
			name = deref(*v).Value
		} else if k := mappingSlot(copyNode(item), "kind"); k != nil {
			name = fmt.Sprintf("%s-%d", deref(*k).Value, i+1)
		}
		if name == part {
			return i, "", ""
		}
		if name != "" {
			names = append(names, name)
		}
	}
	if i, err := strconv.Atoi(part); err == nil {
		if i >= 0 && i < len(list.Content) {
			return i, "", ""
		}
		return 0, fmt.Sprintf("%s has %d items: no index %d", where, len(list.Content), i), "indexes count from 0"
	}
	mean, choices := suggest(part, names)
	hint := "name an item of " + where + " by its name or its index from 0"
	if choices != "" {
		hint = where + " has: " + choices + "; or give an index from 0"
	}
	return 0, fmt.Sprintf("%s has no item named %q%s", where, part, mean), hint
}
