package mariadb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/firedrill/firedrill/backend"
	mdbsampler "github.com/firedrill/firedrill/db/mariadb/sampler"
	"github.com/firedrill/firedrill/sampler"
	"github.com/firedrill/firedrill/sampler/host"
	"github.com/firedrill/firedrill/sampler/host/hostmetric"
)

var _ backend.Sampled = (*target)(nil)

// Samplers connects MariaDB's samplers (one session; their statements
// carry /* firedrill-sampler */) and the host's (CPU, memory, the data
// directory's disk, and firedrill itself): the host on every tick,
// the process list on every tick too, MariaDB's other sources at most
// once a second (mdbsampler.EveryTick says why).
func (tg *target) Samplers(ctx context.Context, timeout time.Duration) (*backend.Sampling, error) {
	// As the account of --dsn, in no database: on a given server with
	// --run-as it may have no privilege on firedrill's.
	set, err := mdbsampler.New(ctx, tg.config("").FormatDSN(), mdbsampler.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("samplers: %w", err)
	}
	dataDir := ""
	if tg.inst != nil {
		dataDir = tg.inst.DataDir()
	}
	hosts := host.New(dataDir)
	notes := set.Notes()
	// The server's process: its CPU apart from firedrill's.
	if tg.inst != nil {
		hosts = append(hosts, host.Server(tg.inst.PID))
	} else if pid, note := tg.givenServerPID(ctx); pid > 0 {
		hosts = append(hosts, host.Server(func() int { return pid }))
	} else {
		if notes == nil {
			notes = map[string]string{}
		}
		notes[hostmetric.Server] = note
	}
	return &backend.Sampling{
		Sources:    sampler.Schedule(set.Samplers(), hosts),
		Notes:      notes,
		Close:      set.Close,
		Unanswered: mdbsampler.Unanswered,
	}, nil
}

// serverPrograms are the names a MariaDB or MySQL server runs as.
var serverPrograms = []string{"mariadbd", "mysqld"}

// givenServerPID finds a given server's process on this host, for the
// server sampler: the one process a mariadbd is, from the file it wrote
// its id to (@@pid_file), else as the process listening on its port or
// socket. 0 and why not when the server is elsewhere or its process is
// not visible here (a container's).
func (tg *target) givenServerPID(ctx context.Context) (int, string) {
	cfg := tg.config("")
	port, socket := 0, ""
	switch cfg.Net {
	case "unix":
		socket = cfg.Addr
	default:
		h, p, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			return 0, "server CPU unknown: " + err.Error()
		}
		if !host.Local(h) {
			return 0, host.RemoteNote
		}
		if port, err = strconv.Atoi(p); err != nil {
			return 0, "server CPU unknown: port " + p
		}
	}
	admin, err := tg.adminHandle()
	if err != nil {
		return 0, "server CPU unknown: " + err.Error()
	}
	var pidFile string
	var fromFile error = errors.New("no @@pid_file")
	if err := admin.QueryRowContext(ctx, "SELECT @@pid_file /* firedrill-sampler */").Scan(&pidFile); err == nil && pidFile != "" {
		if b, err := os.ReadFile(pidFile); err != nil {
			fromFile = err
		} else if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			fromFile = fmt.Errorf("%s: %w", pidFile, err)
		} else if fromFile = host.Check(pid, serverPrograms...); fromFile == nil {
			return pid, ""
		}
	}
	pid, err := host.Listener(port, socket)
	if err == nil {
		err = host.Check(pid, serverPrograms...)
	}
	if err != nil {
		return 0, fmt.Sprintf("server CPU unknown: @@pid_file: %v; the listener: %v", fromFile, err)
	}
	return pid, ""
}
