package backend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/event"
	"github.com/firedrill/firedrill/scenario"
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
		{name: "planned kind", kind: "mariadb", wantsErr: true, want: "target kind mariadb is not built yet (built: kv, postgres)"},
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
	if _, err := NewRegistry(fake{kind: "redis"}).ForDSN("host=db"); err == nil {
		t.Error("ForDSN found a backend for a key=value DSN without the default kind")
	}
}

// A kind of event offered by two backends would decode one way for both:
// a programming error.
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
