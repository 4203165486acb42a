package http

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/http/instance/journalapi"
	"github.com/firedrill/firedrill/scenario"
)

// service is a running embedded service (Instance.Stop and the like).
type service interface {
	URL() string
	Addr() string
	Stop() error
}

// embeddedService is a service of firedrill's own that a target of kind
// http starts in firedrill's process (embedded: NAME), in front of the
// database of another target of the run (database: NAME): the databases'
// throwaway servers' counterpart for a service. Nothing of it is a
// command the scenario gives, so it needs no --allow-shell, and it stops
// with the run (and with firedrill, whatever ends it).
type embeddedService struct {
	name    string
	about   string
	version string
	// database is the kind of database it is put in front of.
	database, product string
	start             func(ctx context.Context, dsn string, log io.Writer) (service, error)
}

// embeddedServices are the services embedded: can name.
var embeddedServices = []embeddedService{
	{
		name: journalapi.Name, about: "the journal feed over PostgreSQL (examples/http-journal.yaml)",
		version: journalapi.Version, database: "postgres", product: "PostgreSQL",
		start: func(ctx context.Context, dsn string, log io.Writer) (service, error) {
			return journalapi.Start(ctx, journalapi.Config{DSN: dsn, Log: log})
		},
	},
}

func embeddedByName(name string) (embeddedService, bool) {
	i := slices.IndexFunc(embeddedServices, func(s embeddedService) bool { return s.name == name })
	if i < 0 {
		return embeddedService{}, false
	}
	return embeddedServices[i], true
}

func embeddedNames() string {
	var names []string
	for _, s := range embeddedServices {
		names = append(names, s.name)
	}
	return strings.Join(names, ", ")
}

// checkEmbedded refuses, at its place in the file, an embedded: name
// firedrill has no service of, one without its database:, and a
// database: with no embedded: to hand it to.
func checkEmbedded(sc *scenario.Scenario) error {
	t := sc.Target
	if t.EmbeddedName == "" {
		if t.Database != "" {
			return &scenario.Error{File: sc.File, Pos: t.DatabasePos, Msg: "database: is for an embedded service, and this target has no embedded:",
				Hint: "add embedded: (" + embeddedNames() + "), or leave database: out"}
		}
		return nil
	}
	svc, ok := embeddedByName(t.EmbeddedName)
	if !ok {
		return &scenario.Error{File: sc.File, Pos: t.EmbeddedPos, Msg: fmt.Sprintf("embedded: firedrill has no service %q", t.EmbeddedName),
			Hint: "it has: " + embeddedNames() + "; give your own service with url: or --dsn NAME=http://…"}
	}
	if t.Database == "" {
		return &scenario.Error{File: sc.File, Pos: t.EmbeddedPos, Msg: fmt.Sprintf("embedded: %s needs its database", svc.name),
			Hint: fmt.Sprintf("add database: NAME, the target of its %s, written before this one", svc.product)}
	}
	return nil
}

// startEmbedded starts the target's embedded service, handed the
// connection string of its database's target.
func startEmbedded(ctx context.Context, spec backend.Spec) (service, embeddedService, error) {
	t := spec.Scenario.Target
	svc, ok := embeddedByName(t.EmbeddedName)
	if !ok {
		return nil, svc, fmt.Errorf("embedded: firedrill has no service %q (it has: %s)", t.EmbeddedName, embeddedNames())
	}
	if spec.Peer == nil {
		return nil, svc, fmt.Errorf("embedded: %s needs a database: target, and this run has one system", svc.name)
	}
	peer, err := spec.Peer(t.Database)
	if err != nil {
		return nil, svc, fmt.Errorf("embedded: %s: database: %w", svc.name, err)
	}
	if peer.Kind != svc.database {
		return nil, svc, fmt.Errorf("embedded: %s runs in front of %s, and database: %s is of kind %s", svc.name, svc.product, t.Database, peer.Kind)
	}
	if peer.ConnString == "" {
		return nil, svc, fmt.Errorf("embedded: %s: target %s gives no connection string", svc.name, t.Database)
	}
	run, err := svc.start(ctx, peer.ConnString, spec.Log)
	if err != nil {
		return nil, svc, err
	}
	return run, svc, nil
}
