package scenario

import (
	"reflect"
	"strings"
	"testing"
)

// setup.keys (Redis) decodes its strings' count and size and each
// collection's, with default sizes, is recorded as a kind-specific key,
// and is refused, at the mistake's line and column, when it could not run.
func TestSetupKeys(t *testing.T) {
	t.Parallel()
	const head = "name: k\nduration: 5s\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\n"
	typ := func(key string) KeyType {
		for _, kt := range KeyTypes {
			if kt.Key == key {
				return kt
			}
		}
		t.Fatalf("no key type %s", key)
		return KeyType{}
	}
	tests := []struct {
		setup   string
		want    KeysSetup // Pos left out
		wantErr string    // with its line:col
	}{
		// Today's strings, unchanged.
		{"setup: {keys: {count: 1000}}", KeysSetup{Count: 1000, Size: 100}, ""},
		{"setup: {keys: {count: 10, size: 1KiB}}", KeysSetup{Count: 10, Size: 1024}, ""},
		// Collections beside them, each with its own size.
		{"setup: {keys: {count: 10, lists: {count: 2, length: 50, size: 8}}}",
			KeysSetup{Count: 10, Size: 100, Collections: []CollectionKeys{{Type: typ("lists"), Count: 2, Elements: 50, Size: 8}}}, ""},
		// Collections alone, in the order written, sizes defaulted.
		{"setup:\n  keys:\n    zsets: {count: 1, members: 100000}\n    hashes: {count: 3, fields: 4}\n    sets: {count: 1, members: 10, size: 2}\n    streams: {count: 1, entries: 7, size: 1KiB}",
			KeysSetup{Size: 100, Collections: []CollectionKeys{
				{Type: typ("zsets"), Count: 1, Elements: 100000, Size: 100},
				{Type: typ("hashes"), Count: 3, Elements: 4, Size: 100},
				{Type: typ("sets"), Count: 1, Elements: 10, Size: 2},
				{Type: typ("streams"), Count: 1, Elements: 7, Size: 1024},
			}}, ""},
		{"setup: {keys: {size: 10}}", KeysSetup{}, "4:16: setup.keys: size is the string keys' and needs count"},
		{"setup: {keys: {}}", KeysSetup{}, "4:15: setup.keys needs count (string keys) or one of lists"},
		{"setup: {keys: {count: 0}}", KeysSetup{}, "4:23: count"},
		{"setup: {keys: {count: 5, size: 0}}", KeysSetup{}, "4:32: setup.keys: size must be"},
		{"setup: {keys: {count: 5, bytes: 3}}", KeysSetup{}, `4:26: unknown key "bytes"`},
		// A collection's own element key, and nothing else's.
		{"setup: {keys: {lists: {count: 2}}}", KeysSetup{}, "4:23: setup.keys.lists needs length"},
		{"setup: {keys: {hashes: {count: 2, length: 3}}}", KeysSetup{}, `4:35: unknown key "length"`},
		{"setup: {keys: {sets: {members: 2}}}", KeysSetup{}, "4:22: setup.keys.sets needs count"},
		{"setup: {keys: {streams: {count: 1, entries: 0}}}", KeysSetup{}, "4:45: entries"},
		{"setup: {keys: {lists: {count: 1, length: 1, size: 1GB}}}", KeysSetup{}, "4:51: setup.keys.lists: size must be"},
		{"setup: {keys: {sets: {count: 1, members: 1000, size: 3}}}", KeysSetup{}, "4:54: setup.keys.sets: size 3 bytes cannot hold 1000 distinct members"},
		{"setup: {keys: {zset: {count: 1, members: 1}}}", KeysSetup{}, `4:16: unknown key "zset"; did you mean "zsets"?`},
		{"setup: {keys: {lists: [1, 2]}}", KeysSetup{}, "4:23: setup.keys.lists: want a mapping"},
	}
	for _, tt := range tests {
		s, err := Parse("k.yaml", []byte(head+tt.setup+"\n"), Options{})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one with %q", tt.setup, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.setup, err)
			continue
		}
		got := s.Setup.Keys
		got.Pos = Pos{}
		for i := range got.Collections {
			if got.Collections[i].Pos.Line == 0 {
				t.Errorf("%s: collection %d has no position", tt.setup, i)
			}
			got.Collections[i].Pos = Pos{}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.setup, got, tt.want)
		}
		if len(s.KindKeys) != 1 || s.KindKeys[0].Key != "setup.keys" {
			t.Errorf("%s: kind keys %v", tt.setup, s.KindKeys)
		}
	}
}

// Redis's directives have dashes: target settings take them.
func TestSettingNamesWithDashes(t *testing.T) {
	t.Parallel()
	src := "name: k\nduration: 5s\ntarget: {settings: {maxmemory-policy: allkeys-lru}}\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\n"
	s, err := Parse("k.yaml", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Target.Settings["maxmemory-policy"] != "allkeys-lru" {
		t.Errorf("settings %v", s.Target.Settings)
	}
	if _, err := Parse("k.yaml", []byte(strings.Replace(src, "maxmemory-policy", "-x", 1)), Options{}); err == nil {
		t.Error("a name starting with a dash was taken")
	}
}
