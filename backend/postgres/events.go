package postgres

import (
	"context"
	"fmt"
	"io"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/backend/postgres/pgevent"
	"github.com/firedrill/firedrill/event"
)

var (
	_ backend.EventKinds = Backend{}
	_ backend.Restorer   = Backend{}
)

// EventKinds are PostgreSQL's own kinds of event (hold_transaction, sql,
// settings, terminate).
func (Backend) EventKinds() []event.Kind { return pgevent.Kinds() }

// Restore puts back the settings that settings events changed with ALTER
// SYSTEM on the server at dsn and recorded in schema's restore table,
// writing one line per setting.
func (Backend) Restore(ctx context.Context, dsn, schema string, w io.Writer) error {
	restored, err := pgevent.RestoreSettings(ctx, dsn, schema)
	for _, r := range restored {
		fmt.Fprintf(w, "%s\n", r)
	}
	if err != nil {
		return err
	}
	if len(restored) == 0 {
		fmt.Fprintf(w, "nothing to restore: no setting changed by firedrill is recorded in %s.%s\n", schema, pgevent.RestoreTable)
	}
	return nil
}
