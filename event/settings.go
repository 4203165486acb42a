package event

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// SettingsConfig is what a settings event takes, whatever its database.
type SettingsConfig struct {
	Settings map[string]string // each name set to its value, in name order
	Restart  bool              // restart the embedded server to apply them (kinds whose SettingsOptions.Restart is set)
}

// SettingsOptions are what a backend's settings kind says of its keys.
type SettingsOptions struct {
	// Example is the settings key as a scenario writes it
	// ("settings: {work_mem: 64MB}"), for hints.
	Example string
	// ValidName accepts the names the backend splices into its
	// statements (nil: any, the server judging them); NotAName says what
	// a name must be ("a parameter name").
	ValidName func(name string) bool
	NotAName  string
	// Restart offers the restart key: apply the settings by restarting
	// the embedded server.
	Restart bool
	// CanRestart says whether env's server is one the backend can restart
	// (nil: whether env.Restart is set); restart: true needs it.
	CanRestart func(env *Env) bool
}

// SettingsRun is one run of a settings event, as its backend applies it.
type SettingsRun struct {
	Name     string            // the event's name
	Settings map[string]string // the event's own copy
	Names    []string          // Settings's names, sorted: the order they are applied in
	Restart  bool
	// Detail holds what the timeline is told ("changed", and "restart"
	// where the kind offers it) and takes what the backend adds
	// ("effective", "restart_seconds").
	Detail  map[string]any
	started Started
}

// Begin tells the timeline that the event has begun (once the backend is
// connected), with Detail as it is then.
func (r *SettingsRun) Begin() { Notify(r.started, maps.Clone(r.Detail)) }

// ApplySettings applies a settings event on env's server (as the admin
// where there is one), calling run.Begin once connected, and returns what
// the event's Run does (detail is run.Detail once begun); its errors name
// the event already ("settings NAME: …").
type ApplySettings func(ctx context.Context, env *Env, run *SettingsRun) (outcome string, detail map[string]any, err error)

// SettingsKind is the settings kind of a backend that applies settings
// with apply.
func SettingsKind(opts SettingsOptions, apply ApplySettings) Kind {
	keys := []string{"settings"}
	if opts.Restart {
		keys = append(keys, "restart")
	}
	return Kind{
		EventKind: scenario.EventKind{
			Name:    "settings",
			Keys:    keys,
			Example: "{kind: settings, at: 30s, " + opts.Example + "}",
			Decode: func(d *scenario.EventDecoder) (any, time.Duration) {
				var c SettingsConfig
				d.Key("settings", func(v scenario.Value) { c.Settings = decodeSettings(d, v, opts) })
				d.Key("restart", func(v scenario.Value) { c.Restart = decodeRestart(d, v) })
				d.Need("settings")
				return c, 0
			},
		},
		Build: BuildWith(func(spec scenario.Event, c SettingsConfig) Event {
			return &settingsEvent{name: Name(spec), config: SettingsConfig{Settings: maps.Clone(c.Settings), Restart: c.Restart}, opts: opts, apply: apply}
		}),
	}
}

// decodeSettings decodes the settings key: a mapping of names to values,
// not empty, whose values hold no NUL byte and whose names the backend
// accepts (names are spliced into its statements, values quoted).
func decodeSettings(d *scenario.EventDecoder, v scenario.Value, opts SettingsOptions) map[string]string {
	settings := v.Settings()
	if len(settings) == 0 && v.EmptyMapping() {
		v.Hintf("as in "+opts.Example, "%s: settings: empty", d.What())
	}
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		switch {
		case opts.ValidName != nil && !opts.ValidName(name):
			v.Errorf("settings: %q is not %s", name, opts.NotAName)
		case strings.ContainsRune(settings[name], 0):
			v.Errorf("settings.%s: the value holds a NUL byte", name)
		}
	}
	return settings
}

// decodeRestart decodes the restart key, which a scenario may set only
// for the embedded server.
func decodeRestart(d *scenario.EventDecoder, v scenario.Value) bool {
	restart, _ := v.Bool()
	if restart {
		needEmbedded(d, v.Hintf, "firedrill restarts only the server it started; remove dsn or restart")
	}
	return restart
}

// settingsEvent changes the server's settings the backend's way.
type settingsEvent struct {
	name   string
	config SettingsConfig
	opts   SettingsOptions
	apply  ApplySettings
}

var (
	_ Event           = (*settingsEvent)(nil)
	_ Checker         = (*settingsEvent)(nil)
	_ SettingsChanger = (*settingsEvent)(nil)
)

// ChangesSettings says yes: the server's settings differ after the event.
func (e *settingsEvent) ChangesSettings() bool { return true }

// Check refuses restart: true when the backend cannot restart env's
// server.
func (e *settingsEvent) Check(env *Env) error {
	if !e.config.Restart {
		return nil
	}
	canRestart := env.Restart != nil
	if e.opts.CanRestart != nil {
		canRestart = e.opts.CanRestart(env)
	}
	if !canRestart {
		return fmt.Errorf("settings %s: restart needs the embedded server", e.name)
	}
	return nil
}

// Run has the backend apply the settings, in name order.
func (e *settingsEvent) Run(ctx context.Context, env *Env, started Started) (string, map[string]any, error) {
	if err := e.Check(env); err != nil {
		return "", nil, err
	}
	run := &SettingsRun{
		Name:     e.name,
		Settings: maps.Clone(e.config.Settings),
		Names:    slices.Sorted(maps.Keys(e.config.Settings)),
		Restart:  e.config.Restart,
		Detail:   map[string]any{"changed": maps.Clone(e.config.Settings)},
		started:  started,
	}
	if e.opts.Restart {
		run.Detail["restart"] = e.config.Restart
	}
	return e.apply(ctx, env, run)
}

// SettingsOutcome is a settings event's outcome: each name with the value
// the server shows after ("work_mem = 64MB, …"), then how ("; reloaded")
// when how is not "".
func SettingsOutcome(names []string, effective map[string]string, how string) string {
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s = %s", name, effective[name]))
	}
	outcome := strings.Join(parts, ", ")
	if how != "" {
		outcome += "; " + how
	}
	return outcome
}
