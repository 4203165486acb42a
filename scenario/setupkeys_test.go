package scenario

import (
	"strings"
	"testing"
)

// setup.keys (Redis) decodes its count and size, with a default size, is
// recorded as a kind-specific key, and is refused when it could not run.
func TestSetupKeys(t *testing.T) {
	t.Parallel()
	const head = "name: k\nduration: 5s\nworkloads: [{name: w, clients: 1, scripts: [select-only]}]\n"
	tests := []struct {
		setup   string
		want    KeysSetup // Pos left out
		wantErr string
	}{
		{"setup: {keys: {count: 1000}}", KeysSetup{Count: 1000, Size: 100}, ""},
		{"setup: {keys: {count: 10, size: 1KiB}}", KeysSetup{Count: 10, Size: 1024}, ""},
		{"setup: {keys: {size: 10}}", KeysSetup{}, "needs count"},
		{"setup: {keys: {count: 0}}", KeysSetup{}, "count"},
		{"setup: {keys: {count: 5, size: 0}}", KeysSetup{}, "size"},
		{"setup: {keys: {count: 5, bytes: 3}}", KeysSetup{}, "bytes"},
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
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.setup, got, tt.want)
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
