package clikit

import (
	"os"
	"testing"
)

func TestUseColor(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		name     string
		getenv   func(string) string
		terminal bool
		want     bool
	}{
		{"a terminal without NO_COLOR", env("TERM", "xterm"), true, true},
		{"not a terminal", env(), false, false},
		{"NO_COLOR set to anything", env("NO_COLOR", "1"), true, false},
		{"NO_COLOR empty counts as unset", env("NO_COLOR", ""), true, true},
		{"a dumb terminal", env("TERM", "dumb"), true, false},
		{"no environment", nil, true, false},
	} {
		if got := UseColor(c.getenv, c.terminal); got != c.want {
			t.Errorf("%s: UseColor = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is taken for a terminal")
	}
	if IsTerminal(nil) {
		t.Error("nil is taken for a terminal")
	}
}

func TestPaint(t *testing.T) {
	t.Parallel()
	if got := Paint(false, Red, "x"); got != "x" {
		t.Errorf("Paint off = %q", got)
	}
	if got := Paint(true, Red, "x"); got != "\x1b[31mx\x1b[0m" {
		t.Errorf("Paint on = %q", got)
	}
}
