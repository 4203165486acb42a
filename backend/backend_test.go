package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/script"
)

// fake is a backend for the registry's own logic; it opens nothing.
type fake struct {
	kind    string
	schemes []string
	keys    []string
}

func (f fake) Kind() string                               { return f.kind }
func (f fake) Open(context.Context, Spec) (Target, error) { return nil, errors.New("not a database") }
func (f fake) Schemes() []string                          { return f.schemes }
func (f fake) Keys() []string                             { return f.keys }

func TestRegistryResolve(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(
		fake{kind: "postgres", schemes: []string{"postgres", "postgresql"}, keys: []string{"setup.pgbench", "workloads.mode"}},
		fake{kind: "kv", schemes: []string{"kv"}},
	)
	tests := []struct {
		name     string
		kind     string
		dsn      string
		keys     []scenario.KeyUse
		want     string // the kind, or a part of the error
		wantsErr bool
	}{
		{name: "default kind", want: "postgres"},
		{name: "named kind", kind: "kv", want: "kv"},
		{name: "scheme picks the kind", dsn: "kv://127.0.0.1:1/0", want: "kv"},
		{name: "conninfo without a scheme is the scenario's kind", dsn: "host=/tmp dbname=x", want: "postgres"},
		{name: "scheme agrees", kind: "postgres", dsn: "postgresql://u@h/db", want: "postgres"},
		{name: "scheme disagrees", kind: "kv", dsn: "postgres://u@h/db", wantsErr: true, want: "s.yaml:3:9: target kind kv, but the dsn is a postgres:// URL"},
		{name: "unknown scheme", dsn: "mysql://u@h/db", wantsErr: true, want: "no backend takes mysql:// URLs (known: kv://, postgres://, postgresql://)"},
		{name: "kind not built", kind: "mariadb", wantsErr: true, want: "target kind mariadb is not known (known: kv, postgres)"},
		{name: "unknown kind", kind: "oracle", wantsErr: true, want: "target kind oracle is not known"},
		{name: "key the kind takes", keys: []scenario.KeyUse{{Key: "setup.pgbench", Pos: scenario.Pos{Line: 5, Col: 3}}}, want: "postgres"},
		{name: "key the kind does not take", kind: "kv", keys: []scenario.KeyUse{{Key: "setup.pgbench", Pos: scenario.Pos{Line: 5, Col: 3}}},
			wantsErr: true, want: "s.yaml:5:3: setup.pgbench makes no sense for a kv target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sc := &scenario.Scenario{File: "s.yaml", KindKeys: tt.keys,
				Target: scenario.Target{Kind: tt.kind, KindPos: scenario.Pos{Line: 3, Col: 9}}}
			b, err := reg.Resolve(sc, tt.dsn)
			if tt.wantsErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Resolve: %v, want an error with %q", err, tt.want)
				}
				return
			}
			if err != nil || b.Kind() != tt.want {
				t.Fatalf("Resolve: %v, %v; want kind %s", b, err, tt.want)
			}
		})
	}
}

func TestRegistryRefusesAKindTwice(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("a kind registered twice did not panic")
		}
	}()
	NewRegistry(fake{kind: "x"}, fake{kind: "x"})
}

// ForDSN finds a given server's backend by its URL scheme; a key=value
// DSN is the default kind's (firedrill restore has no scenario to ask).
func TestRegistryForDSN(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(fake{kind: "postgres", schemes: []string{"postgres", "postgresql"}}, fake{kind: "redis", schemes: []string{"redis"}})
	tests := []struct {
		dsn, want, wantErr string
	}{
		{"postgres://u@db/app", "postgres", ""},
		{"host=/run/postgresql dbname=app", "postgres", ""},
		{"REDIS://cache:6379", "redis", ""},
		{"mysql://u@db/app", "", "no backend takes mysql:// URLs (known: postgres://, postgresql://, redis://)"},
	}
	for _, tt := range tests {
		b, err := reg.ForDSN(tt.dsn)
		switch {
		case tt.wantErr != "":
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ForDSN(%s): %v, want error %q", tt.dsn, err, tt.wantErr)
			}
		case err != nil || b.Kind() != tt.want:
			t.Errorf("ForDSN(%s): %v, %v; want kind %s", tt.dsn, b, err, tt.want)
		}
	}
	if _, err := NewRegistry().ForDSN("host=db"); err == nil {
		t.Error("ForDSN found a backend for a key=value DSN without the default kind")
	}
}

// A backend offering a kind of event twice (here one of the neutral
// kinds) is a programming error.
func TestRegistryRefusesAnEventKindTwice(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("an event kind offered twice did not panic")
		}
	}()
	shell := event.Kinds()[len(event.Kinds())-1]
	NewRegistry(evented{fake{kind: "x"}, []event.Kind{shell}})
}

// evented is a fake backend with event kinds of its own.
type evented struct {
	fake
	kinds []event.Kind
}

func (e evented) EventKinds() []event.Kind { return e.kinds }

// sqlKind is a kind named sql that takes one key of its own, as the
// PostgreSQL and MariaDB backends each have one.
func sqlKind(key string) event.Kind {
	return event.Kind{EventKind: scenario.EventKind{
		Name: "sql", Keys: []string{key},
		Decode: func(d *scenario.EventDecoder) (any, time.Duration) {
			var v string
			d.Key(key, func(val scenario.Value) { v, _ = val.Str() })
			return key + "=" + v, 0
		},
	}}
}

// Two backends may each have a kind of event of the same name: a
// scenario's events decode with its target's backend's kinds, chosen by
// target.kind, the --dsn's scheme or target.dsn's, and its scripts are
// read in that backend's dialect.
func TestScenarioEventsDecodeWithTheirTargetsKinds(t *testing.T) {
	t.Parallel()
	r := NewRegistry(
		evented{fake{kind: "postgres", schemes: []string{"postgres"}}, []event.Kind{sqlKind("query")}},
		dialected{evented{fake{kind: "mariadb", schemes: []string{"mysql"}}, []event.Kind{sqlKind("statement")}}, fakeMySQL},
	)
	const body = "name: s\nduration: 5s\nworkloads: [{name: w, clients: 1, scripts: [{inline: 'SELECT 1;'}]}]\nevents: [{name: e, kind: sql, at: 1s, %s: x}]\n"
	for _, tt := range []struct {
		target, dsn, key, want string
		dialect                script.Dialect
	}{
		{"", "", "query", "query=x", script.Dialect{}},
		{"target: {kind: mariadb}\n", "", "statement", "statement=x", fakeMySQL},
		{"", "mysql://u@127.0.0.1/db", "statement", "statement=x", fakeMySQL},
		{"target: {dsn: 'mysql://u@127.0.0.1/db'}\n", "", "statement", "statement=x", fakeMySQL},
		{"target: {kind: postgres}\n", "", "query", "query=x", script.Dialect{}},
	} {
		src := tt.target + fmt.Sprintf(body, tt.key)
		sc, err := scenario.Parse("s.yaml", []byte(src), r.ScenarioOptionsFor(tt.dsn))
		if err != nil {
			t.Errorf("%q with --dsn %q: %v", src, tt.dsn, err)
			continue
		}
		if got := sc.Events[0].Config; got != tt.want || sc.Dialect != tt.dialect {
			t.Errorf("%q with --dsn %q: config %v, dialect %v; want %v, %v", src, tt.dsn, got, sc.Dialect, tt.want, tt.dialect)
		}
	}
	// The other backend's key is unknown to the target's kind.
	src := "target: {kind: mariadb}\n" + fmt.Sprintf(body, "query")
	if _, err := scenario.Parse("s.yaml", []byte(src), r.ScenarioOptions()); err == nil || !strings.Contains(err.Error(), "query") {
		t.Errorf("a mariadb scenario's sql event with postgres's key: %v, want an error naming query", err)
	}
}

// dialected is a fake backend whose scripts are in a dialect of its own.
type dialected struct {
	evented
	d script.Dialect
}

func (d dialected) Dialect() script.Dialect { return d.d }

// fakeMySQL is the dialect of the fake kind "mariadb".
var fakeMySQL = script.Dialect{Name: "fake mysql", EverySemicolon: true, QuestionMarks: true}
