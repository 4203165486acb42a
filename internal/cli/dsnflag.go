package cli

import (
	"fmt"
	"strings"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/scenario"
)

// dsnFlag is --dsn as run and validate take it: one URL or connection
// string for a scenario of one system, or NAME=URL, repeated, giving each
// named target of a scenario of several (targets:) a server.
type dsnFlag struct {
	args []string
}

// dsnUsage is --dsn's help line.
const dsnUsage = "run against this server instead of the scenario's target (connection string or URL); " +
	"with several targets, NAME=URL gives the target NAME its server (repeatable)"

// split tells the plain DSN from the named ones: NAME=URL is a name
// (lower-case letters, digits, '_', '-') then '=' then a URL with a
// scheme, which a key=value connection string ("host=… port=…") is not.
func (f *dsnFlag) split() (plain string, named map[string]string, err error) {
	for _, arg := range f.args {
		if name, url, ok := namedDSN(arg); ok {
			if named == nil {
				named = map[string]string{}
			}
			if _, dup := named[name]; dup {
				return "", nil, fmt.Errorf("--dsn %s=…: given twice", name)
			}
			named[name] = url
			continue
		}
		if plain != "" {
			return "", nil, fmt.Errorf("--dsn given twice without a target's name: with several targets, write --dsn NAME=URL for each")
		}
		plain = arg
	}
	if plain != "" && named != nil {
		return "", nil, fmt.Errorf("--dsn: give either one server (--dsn URL, a scenario of one system) or each target's (--dsn NAME=URL), not both")
	}
	return plain, named, nil
}

// namedDSN reads NAME=URL.
func namedDSN(arg string) (name, url string, ok bool) {
	name, url, ok = strings.Cut(arg, "=")
	if !ok || name == "" || !strings.Contains(url, "://") {
		return "", "", false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "", "", false
		}
	}
	return name, url, true
}

// checkNamed refuses named DSNs for a scenario of one system, and a plain
// DSN for one of several, naming the targets there are.
func checkNamed(sc *scenario.Scenario, plain string, named map[string]string) error {
	switch {
	case len(named) > 0 && len(sc.Targets) == 0:
		return fmt.Errorf("--dsn NAME=URL names a target, but %s has one system (target:): give --dsn URL", sc.File)
	case plain != "" && len(sc.Targets) > 0:
		return fmt.Errorf("--dsn URL: %s has several targets (%s): give each its server with --dsn NAME=URL",
			sc.File, strings.Join(sc.TargetNames(), ", "))
	}
	return nil
}

// describeTargets is what validate says of a scenario of several targets
// after "ok": each target's name, kind (as given, else as its dsn's
// scheme or the default says: the backend the run would use) and server,
// and its workloads (a fallback to it marked) and events; nothing for a
// scenario of one system, whose line stays as it was.
func describeTargets(sc *scenario.Scenario, backends *backend.Registry) string {
	if len(sc.Targets) == 0 {
		return ""
	}
	var b strings.Builder
	for _, name := range sc.TargetNames() {
		v := sc.ForTarget(name)
		kind, server := v.Target.Kind, "embedded"
		if be, err := backends.Resolve(v, ""); err == nil {
			kind = be.Kind()
		}
		if !v.Target.Embedded() {
			server = "given server"
		}
		var workloads, events []string
		for _, w := range sc.Workloads {
			switch {
			case w.Target == name:
				workloads = append(workloads, w.Name)
			case w.Fallback != nil && w.Fallback.Target == name:
				workloads = append(workloads, w.Name+" (fallback)")
			}
		}
		for _, e := range v.Events {
			events = append(events, e.Name)
		}
		fmt.Fprintf(&b, "\n  target %s: %s, %s; workloads: %s", name, kind, server, orNone(workloads))
		if len(events) > 0 {
			fmt.Fprintf(&b, "; events: %s", strings.Join(events, ", "))
		}
	}
	return b.String()
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
