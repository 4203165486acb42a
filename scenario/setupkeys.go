package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits of setup.keys.
const (
	maxSetupKeys     = 100_000_000 // keys of one type
	maxSetupElements = 100_000_000 // elements of one collection
	maxSetupSize     = 512 << 20   // bytes of one value or element: Redis's proto-max-bulk-len
)

// setupKeys decodes a setup.keys into keys (the scenario's or a target's setup): string keys (count, size) beside the
// collections (lists: {count, length, size}, …), at least one of them.
func (l *loader) setupKeys(v *yaml.Node, keys *KeysSetup) {
	*keys = KeysSetup{Pos: pos(v), Size: 100}
	known := []field{
		{"count", func(v *yaml.Node) {
			if n, ok := l.integer(v, "count", 1, maxSetupKeys); ok {
				keys.Count = int(n)
			}
		}},
		{"size", func(v *yaml.Node) {
			if n, ok := l.setupSize(v, "setup.keys"); ok {
				keys.Size = n
			}
		}},
	}
	for _, kt := range KeyTypes {
		known = append(known, field{kt.Key, func(v *yaml.Node) {
			if c, ok := l.collectionKeys(v, kt); ok {
				keys.Collections = append(keys.Collections, c)
			}
		}})
	}
	present := l.fields(v, "setup.keys", known)
	if present == nil {
		return
	}
	if set(present, "size") && !set(present, "count") {
		l.hintf(present["size"].key, "as in keys: {count: 100000, size: 100}; a collection's size goes in its own mapping, as in lists: {count: 10, length: 1000, size: 100}",
			"setup.keys: size is the string keys' and needs count")
		return
	}
	types := []string{"count"}
	for _, kt := range KeyTypes {
		types = append(types, kt.Key)
	}
	if countPresent(present, types...) == 0 {
		l.hintf(v, "as in keys: {count: 100000, size: 100} for strings, or lists: {count: 10, length: 1000}",
			"setup.keys needs count (string keys) or one of %s", strings.Join(types[1:], ", "))
	}
}

// collectionKeys decodes one type's mapping of setup.keys.
func (l *loader) collectionKeys(v *yaml.Node, kt KeyType) (CollectionKeys, bool) {
	what := "setup.keys." + kt.Key
	c := CollectionKeys{Pos: pos(v), Type: kt, Size: 100}
	sizeSet := false // the default holds any count's number
	present := l.fields(v, what, []field{
		{"count", func(v *yaml.Node) {
			if n, ok := l.integer(v, "count", 1, maxSetupKeys); ok {
				c.Count = int(n)
			}
		}},
		{kt.Elements, func(v *yaml.Node) {
			if n, ok := l.integer(v, kt.Elements, 1, maxSetupElements); ok {
				c.Elements = int(n)
			}
		}},
		{"size", func(v *yaml.Node) {
			if n, ok := l.setupSize(v, what); ok {
				c.Size, sizeSet = n, true
			}
		}},
	})
	if present == nil {
		return c, false
	}
	example := fmt.Sprintf("as in %s: {count: 10, %s: 1000, size: 100}", kt.Key, kt.Elements)
	ok := true
	for _, key := range []string{"count", kt.Elements} {
		if e, has := present[key]; !has || isNull(e.val) {
			l.hintf(v, example, "%s needs %s", what, key)
			ok = false
		} else if e.bad {
			ok = false
		}
	}
	if !ok {
		return c, false
	}
	if kt.Distinct {
		digits := int64(len(strconv.Itoa(c.Elements)))
		if sizeSet && c.Size < digits {
			l.hintf(present["size"].val, fmt.Sprintf("size: %d or more, or leave size out", digits),
				"%s: size %d bytes cannot hold %d distinct members (each is its number, zero-padded to size)", what, c.Size, c.Elements)
			return c, false
		}
	}
	return c, true
}

// setupSize decodes a size of setup.keys: from 1 byte to 512MB.
func (l *loader) setupSize(v *yaml.Node, what string) (int64, bool) {
	n, ok := l.size(v, "size")
	if !ok {
		return 0, false
	}
	if n < 1 || n > maxSetupSize {
		l.errorf(v, "%s: size must be from 1 byte to 512MB", what)
		return 0, false
	}
	return n, true
}
