package pgevent

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/firedrill/firedrill/event"
)

// terminateWaitMillis is how long pg_terminate_backend waits for each
// backend to exit (PostgreSQL 14 and later), so that the event is over
// when the backends are really gone.
const terminateWaitMillis = 5000

// terminateKind is PostgreSQL's terminate event: it ends backends with
// pg_terminate_backend, those of a workload (found by application_name)
// or one pid.
var terminateKind = event.TerminateKind(event.TerminateByNumber[int]("pid", math.MaxInt32), newTerminate)

// terminateEvent ends backends with pg_terminate_backend.
type terminateEvent struct {
	name     string
	appName  string
	workload string
	pid      int
}

var _ event.Event = (*terminateEvent)(nil)

func newTerminate(name string, c event.TerminateConfig[int]) event.Event {
	return &terminateEvent{name: name, appName: sessionAppName(name), workload: c.Workload, pid: c.By}
}

// Run terminates the backends and waits (PostgreSQL 14+) until they have
// exited. A workload with no sessions is an outcome ("terminated 0
// backends"), and so is one that outlived the wait; a pid that was not
// terminated is an error.
func (e *terminateEvent) Run(ctx context.Context, env *event.Env, started event.Started) (string, map[string]any, error) {
	// As the admin, who may end others' sessions; on a confined given
	// server only firedrill's own (Target.Sessions's members).
	sessions := ""
	if t := targetOf(env); t != nil {
		sessions = t.Sessions
	}
	s, err := connect(ctx, adminEnv(env), e.appName)
	if err != nil {
		return "", nil, event.Cancelled(ctx, fmt.Errorf("terminate %s: %w", e.name, err))
	}
	defer s.close(ctx)

	terminate := "pg_terminate_backend(pid)"
	if s.serverMajorVersion() >= 14 {
		terminate = fmt.Sprintf("pg_terminate_backend(pid, %d)", terminateWaitMillis)
	}
	var query, param string
	detail := map[string]any{}
	// ours limits the sessions to firedrill's own on a confined server.
	ours := "true"
	if sessions != "" {
		ours = "pg_has_role(usesysid, $2::name, 'MEMBER')"
	}
	if e.workload != "" {
		param = env.WorkloadTag(e.workload)
		detail["workload"] = e.workload
		detail["application_name"] = param
		query = "SELECT pid, " + terminate + " FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() AND " + ours
	} else {
		param = strconv.Itoa(e.pid)
		detail["target_pid"] = e.pid
		query = "SELECT pid, " + terminate + " FROM (SELECT $1::int AS pid) AS target"
		if sessions != "" {
			query = "SELECT pid, CASE WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = target.pid AND " + ours + ") THEN " + terminate +
				" END FROM (SELECT $1::int AS pid) AS target"
		}
	}
	event.Notify(started, maps.Clone(detail))

	params := []string{param}
	if sessions != "" {
		params = append(params, sessions)
	}
	result, err := s.execParams(ctx, query, params...)
	if err != nil {
		return "", detail, event.Cancelled(ctx, fmt.Errorf("terminate %s: %w", e.name, err))
	}
	terminated, survived := []int{}, []int{}
	for _, row := range result.Rows {
		pid, err := strconv.Atoi(string(row[0]))
		if err != nil {
			return "", detail, fmt.Errorf("terminate %s: pid %q: %w", e.name, row[0], err)
		}
		if string(row[1]) == "t" {
			terminated = append(terminated, pid)
		} else {
			survived = append(survived, pid)
		}
	}
	detail["pids"] = terminated
	if len(survived) > 0 {
		detail["not_terminated"] = survived
	}

	if e.workload == "" {
		if len(terminated) == 0 {
			// The server says why in a warning: not a backend, or still
			// there after the wait.
			why := noticeMessages(s)
			if len(result.Rows) == 1 && result.Rows[0][1] == nil {
				why = "not a session of firedrill's (on a given server a terminate event ends only the run's own sessions)"
			}
			return "not terminated: " + why, detail, fmt.Errorf("terminate %s: %s", e.name, why)
		}
		return fmt.Sprintf("terminated pid %d", e.pid), detail, nil
	}
	outcome := fmt.Sprintf("terminated %d %s of workload %s", len(terminated), plural(len(terminated), "backend"), e.workload)
	if len(survived) > 0 {
		outcome += fmt.Sprintf("; %d not terminated: %s", len(survived), noticeMessages(s))
	}
	return outcome, detail, nil
}

// noticeMessages joins the warnings of the session's last statement.
func noticeMessages(s *session) string {
	if len(s.notices) == 0 {
		return "the server gave no reason"
	}
	messages := make([]string, len(s.notices))
	for i, notice := range s.notices {
		messages[i] = notice.Message
	}
	return strings.Join(messages, "; ")
}

// plural is noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
