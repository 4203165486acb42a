package redisevent

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
)

// settingsKind is how a scenario writes a settings event.
var settingsKind = event.Kind{
	EventKind: scenario.EventKind{
		Name:    "settings",
		Keys:    []string{"settings"},
		Example: "{kind: settings, at: 30s, settings: {appendfsync: \"no\"}}",
		Decode:  decodeSettings,
	},
	Build: event.BuildWith(newSettings),
}

// settingsConfig is what a settings event takes.
type settingsConfig struct {
	Settings map[string]string // CONFIG SET each
}

func decodeSettings(d *scenario.EventDecoder) (any, time.Duration) {
	var c settingsConfig
	d.Key("settings", func(v scenario.Value) {
		// CONFIG SET gets the names as arguments, never spliced into text:
		// the server judges them.
		c.Settings = event.DecodeSettings(d, v, `settings: {appendfsync: "no"}`, nil, "")
	})
	d.Need("settings")
	return c, 0
}

// settingsEvent changes the server's settings with CONFIG SET, which
// takes effect at once and lasts until the server restarts (firedrill
// never runs CONFIG REWRITE).
type settingsEvent struct {
	name     string
	settings map[string]string
}

var (
	_ event.Event           = (*settingsEvent)(nil)
	_ event.SettingsChanger = (*settingsEvent)(nil)
)

// ChangesSettings says yes: the server's settings differ after the event.
func (e *settingsEvent) ChangesSettings() bool { return true }

func newSettings(spec scenario.Event, c settingsConfig) event.Event {
	return &settingsEvent{name: event.Name(spec), settings: maps.Clone(c.Settings)}
}

// Run sets each setting in name order and reads back what the server made
// of it (CONFIG GET gives its own spelling: maxmemory 1gb is 1073741824).
// On a given server each setting's value is recorded before it changes,
// so that RestoreSettings puts it back at the end of the run or after a
// kill; on the embedded server the changes go with the server.
func (e *settingsEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	t, err := targetOf(env)
	if err != nil {
		return "", nil, errorf("settings", e.name, err)
	}
	c, err := connect(ctx, env, e.name)
	if err != nil {
		return "", nil, event.Cancelled(ctx, errorf("settings", e.name, err))
	}
	defer c.Close()
	names := slices.Sorted(maps.Keys(e.settings))
	detail := map[string]any{"changed": maps.Clone(e.settings)}
	event.Notify(started, maps.Clone(detail))
	effective := map[string]string{}
	for _, name := range names {
		if t.Given {
			if t.OnRecord != nil {
				t.OnRecord()
			}
			if err := recordOriginal(ctx, c, name); err != nil {
				return "", detail, event.Cancelled(ctx, errorf("settings", e.name, err))
			}
		}
		if _, err := c.Do(ctx, "CONFIG", "SET", name, e.settings[name]); err != nil {
			return "", detail, event.Cancelled(ctx, errorf("settings", e.name, fmt.Errorf("CONFIG SET %s %s: %w", name, e.settings[name], err)))
		}
		value, err := configGet(ctx, c, name)
		if err != nil {
			return "", detail, event.Cancelled(ctx, errorf("settings", e.name, err))
		}
		effective[name] = value
		if t.Given {
			if err := recordApplied(ctx, c, name, value); err != nil {
				return "", detail, event.Cancelled(ctx, errorf("settings", e.name, err))
			}
		}
	}
	detail["effective"] = effective
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s = %s", name, effective[name]))
	}
	return strings.Join(parts, ", "), detail, nil
}
