package postgres

import (
	"context"
	"fmt"
	"io"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/db/postgres/pgevent"
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
// SYSTEM on the server at dsn and recorded (pgevent.RestoreSchema, or an
// older firedrill's schema's table), and drops the roles of killed runs,
// writing one line per setting and role.
func (Backend) Restore(ctx context.Context, dsn, schema string, w io.Writer) error {
	restored, err := pgevent.RestoreSettings(ctx, dsn, schema)
	for _, r := range restored {
		fmt.Fprintf(w, "%s\n", r)
	}
	if err != nil {
		return err
	}
	dropped, err := DropDeadRunRoles(ctx, dsn)
	for _, name := range dropped {
		fmt.Fprintf(w, "dropped the role %s of a run that is gone\n", name)
	}
	if err != nil {
		return err
	}
	if len(restored) == 0 && len(dropped) == 0 {
		fmt.Fprintf(w, "nothing to restore: no setting changed by firedrill is recorded in %s.%s, and no role of a killed run is left\n",
			pgevent.RestoreSchema, pgevent.RestoreTable)
	}
	return nil
}
