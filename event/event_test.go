package event

import (
	"github.com/firedrill/firedrill/event/eventtest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// New refuses a kind it does not know and a spec whose config is not its
// kind's, and says which event it refused.
func TestNewRejects(t *testing.T) {
	t.Parallel()
	_, err := New(kinds, scenario.Event{Kind: "flood", Name: "x", Pos: scenario.Pos{Line: 12, Col: 5}})
	if err == nil {
		t.Fatal("New accepted an unknown kind")
	}
	mustContain(t, "error", err.Error(), `event x at 12:5: unknown kind "flood"`, "disk_pressure", "shell")
	for _, kind := range KindNames(kinds) {
		_, err := New(kinds, scenario.Event{Kind: kind, Name: "the-event"})
		if err == nil {
			t.Errorf("New(%s spec without a config) succeeded", kind)
			continue
		}
		mustContain(t, "error", err.Error(), kind, "the-event", "ScenarioOptions")
	}
}

// TestDecode: each kind decodes its keys into its config, with the
// scenario's defaults and spellings, and rejects what could not run.
func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		event   string
		want    any    // the config, when wantErr is ""
		wantErr string // "" = valid
	}{
		{"negative rate", "{kind: disk_pressure, at: 1s, size: 1, rate: -1MB/s}", nil, "rate: "},
		{"disk pressure", "{kind: disk_pressure, at: 1s, size: 1GiB, rate: 1.5MB/s, duration: 2s, path: /tmp}",
			diskPressureConfig{Size: 1 << 30, Rate: 1500000, Duration: 2 * time.Second, Path: "/tmp"}, ""},
		{"slow disk", "{kind: disk_pressure, at: 1s, size: 8MB, duration: 20s, mode: slow, fsync_delay: 2.5s}",
			diskPressureConfig{Size: 8000000, Duration: 20 * time.Second, Mode: "slow", FsyncDelay: 2500 * time.Millisecond}, ""},
		// The default delay is just above Redis's 2 s wait for an fsync.
		{"slow disk, default delay", "{kind: disk_pressure, at: 1s, size: 8MB, mode: slow}",
			diskPressureConfig{Size: 8000000, Mode: "slow", FsyncDelay: defaultFsyncDelay}, ""},
		{"write mode", "{kind: disk_pressure, at: 1s, size: 8MB, mode: write}", diskPressureConfig{Size: 8000000, Mode: "write"}, ""},
		{"unknown mode", "{kind: disk_pressure, at: 1s, size: 8MB, mode: sluggish}", nil, `unknown mode "sluggish"`},
		{"fsync_delay without slow mode", "{kind: disk_pressure, at: 1s, size: 8MB, fsync_delay: 3s}", nil, "fsync_delay is the slow disk's; it needs mode: slow"},
		{"zero fsync_delay", "{kind: disk_pressure, at: 1s, size: 8MB, mode: slow, fsync_delay: 0s}", nil, "fsync_delay must be above 0"},
		{"blank command", `{kind: shell, at: 1s, command: "  "}`, nil, "command: empty"},
		{"command", "{kind: shell, at: 1s, command: sync}", shellConfig{Command: "sync"}, ""},
	}
	build := func(ev scenario.Event) error { _, err := New(kinds, ev); return err }
	for _, c := range tests {
		eventtest.CheckDecode(t, ScenarioOptions(kinds), build, c.name, c.event, c.want, c.wantErr)
	}
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1536, "1.5 KiB"},
		{512 << 20, "512 MiB"},
		{3 << 29, "1.5 GiB"},
		{2 << 30, "2 GiB"},
	}
	for _, test := range tests {
		if got := formatBytes(test.n); got != test.want {
			t.Errorf("formatBytes(%d) = %q, want %q", test.n, got, test.want)
		}
	}
}

func TestTailBufferLastLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ output, want string }{
		{"", ""},
		{"one\ntwo\n\n", "two"},
		{"  only  ", "only"},
		{strings.Repeat("a", 5000) + "\nlast\r\n", "last"},
		{strings.Repeat("b", 300), strings.Repeat("b", 199) + "…"},
	}
	for _, test := range tests {
		tail := &tailBuffer{max: shellOutputKept}
		// Written in pieces, as a pipe delivers it.
		for chunk := range slices.Chunk([]byte(test.output), 1000) {
			tail.Write(chunk)
		}
		if got := tail.lastLine(); got != test.want {
			t.Errorf("lastLine of %.20q… = %q, want %q", test.output, got, test.want)
		}
	}
}
