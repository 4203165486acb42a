package event

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/firedrill/firedrill/scenario"
)

// sqlEvent runs statements one by one in its own session, outside a
// transaction, so that CREATE INDEX CONCURRENTLY, VACUUM and the like work.
type sqlEvent struct {
	name       string
	appName    string
	statements []string
}

var _ Event = (*sqlEvent)(nil)

func newSQL(spec scenario.Event) (Event, error) {
	if len(spec.SQL) == 0 {
		return nil, errors.New("needs sql: (the statements to run)")
	}
	for i, stmt := range spec.SQL {
		if strings.TrimSpace(stmt) == "" {
			return nil, fmt.Errorf("sql statement %d is empty", i+1)
		}
	}
	return &sqlEvent{name: eventName(spec), appName: sessionAppName(eventName(spec)), statements: slices.Clone(spec.SQL)}, nil
}

// Run runs the statements in order and stops at the first error. A
// cancelled statement gets a cancel request; note that a cancelled CREATE
// INDEX CONCURRENTLY leaves an invalid index behind, as it does in psql.
func (e *sqlEvent) Run(ctx context.Context, env *Env, started Started) (string, map[string]any, error) {
	s, err := connect(ctx, env, e.appName)
	if err != nil {
		return "", nil, cancelled(ctx, fmt.Errorf("sql %s: %w", e.name, err))
	}
	defer s.close(ctx)

	detail := map[string]any{"pid": s.pid(), "application_name": e.appName}
	notify(started, maps.Clone(detail))
	var timings []map[string]any
	var summary []string
	for i, stmt := range e.statements {
		begin := time.Now()
		_, err := s.exec(ctx, stmt)
		elapsed := time.Since(begin)
		timing := map[string]any{"sql": summarizeSQL(stmt), "seconds": elapsed.Seconds()}
		if err != nil {
			timing["error"] = err.Error()
			if code := sqlState(err); code != "" {
				timing["sqlstate"] = code
			}
		}
		timings = append(timings, timing)
		detail["statements"] = timings
		if err != nil {
			summary = append(summary, fmt.Sprintf("%s failed after %s", summarizeSQL(stmt), took(elapsed)))
			if ctx.Err() != nil {
				return strings.Join(summary, "; "), detail, ctx.Err()
			}
			return strings.Join(summary, "; "), detail, fmt.Errorf("sql %s: statement %d (%s) failed after %s: %w",
				e.name, i+1, summarizeSQL(stmt), took(elapsed), err)
		}
		summary = append(summary, fmt.Sprintf("%s %s", summarizeSQL(stmt), took(elapsed)))
	}
	return strings.Join(summary, "; "), detail, nil
}
