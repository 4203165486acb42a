package sampler_test

import (
	"context"
	"testing"
	"time"

	"github.com/firedrill/firedrill/sampler"
)

// stub is a sampler that reads nothing, momentary or not.
type stub struct {
	name   string
	moment bool
}

func (s stub) Name() string { return s.name }
func (stub) Sample(context.Context) (map[string]float64, any, error) {
	return nil, nil, nil
}

// momentary is a stub that says whether it is read on every tick.
type momentary struct{ stub }

func (m momentary) EveryTick() bool { return m.moment }

var _ sampler.Momentary = momentary{}

func TestScheduleTakesEachSamplersCadence(t *testing.T) {
	t.Parallel()
	server := []sampler.Sampler{
		momentary{stub{"sessions", true}},
		stub{name: "counters"},               // no say: once a second
		momentary{stub{"slow-state", false}}, // says no
	}
	host := []sampler.Sampler{momentary{stub{"host", true}}, stub{name: "disk"}}
	got := sampler.Schedule(server, host)
	want := []struct {
		name              string
		everyTick, server bool
	}{
		{"sessions", true, true},
		{"counters", false, true},
		{"slow-state", false, true},
		{"host", true, false},
		{"disk", false, false},
	}
	if len(got) != len(want) {
		t.Fatalf("%d sources, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Name() != w.name || got[i].EveryTick != w.everyTick || got[i].Server != w.server {
			t.Errorf("source %d = %s every tick %v server %v, want %s %v %v", i, got[i].Name(), got[i].EveryTick, got[i].Server, w.name, w.everyTick, w.server)
		}
	}
}

func TestDue(t *testing.T) {
	t.Parallel()
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const tick = 100 * time.Millisecond
	fast := sampler.Source{EveryTick: true}
	slow := sampler.Source{}
	tests := []struct {
		name      string
		src       sampler.Source
		last, now time.Time
		want      bool
	}{
		{"fast source, just read", fast, start, start.Add(tick), true},
		{"slow source, never read", slow, time.Time{}, start, true},
		{"slow source, a tick later", slow, start, start.Add(tick), false},
		{"slow source, a second later", slow, start, start.Add(time.Second), true},
		// A tick a little early still reads it once a second.
		{"slow source, 960 ms later", slow, start, start.Add(960 * time.Millisecond), true},
		{"slow source, 900 ms later", slow, start, start.Add(900 * time.Millisecond), false},
	}
	for _, tt := range tests {
		if got := tt.src.Due(tt.now, tt.last, tick); got != tt.want {
			t.Errorf("%s: Due = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ interval, want time.Duration }{
		{50 * time.Millisecond, 100 * time.Millisecond}, // never below a round trip
		{250 * time.Millisecond, 200 * time.Millisecond},
		{time.Second, 800 * time.Millisecond},
		{10 * time.Second, 2 * time.Second}, // never above 2 s
	} {
		if got := sampler.Timeout(tt.interval); got != tt.want {
			t.Errorf("Timeout(%v) = %v, want %v", tt.interval, got, tt.want)
		}
	}
}
