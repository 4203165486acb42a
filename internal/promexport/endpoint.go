package promexport

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/firedrill/firedrill/internal/clikit"
)

// Flags are a command's --metrics-addr and --metrics-linger: a live
// Prometheus endpoint for what it runs (firedrill run, drill, pgbench).
type Flags struct {
	Addr   string
	Linger time.Duration
}

// Register adds the flags to a command's flag set.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Addr, "metrics-addr", "", "serve the run's live metrics for Prometheus at http://HOST:PORT/metrics while it runs (e.g. 127.0.0.1:9464; README: Prometheus and Grafana)")
	fs.DurationVar(&f.Linger, "metrics-linger", 0, "with --metrics-addr, keep serving the final values this long after the run ends (e.g. 30s, so a last scrape gets them; Ctrl-C ends it sooner)")
}

// Endpoint is a command's exporter and the server of it while the
// command runs; nil without --metrics-addr, and its methods do nothing
// on nil.
type Endpoint struct {
	exp    *Exporter
	srv    *Server
	linger time.Duration
	stderr io.Writer
}

// Start binds --metrics-addr before the run, so that a busy port is an
// error naming it (exit 1) before anything starts; nil, nil without the
// flag. It says where the metrics are on stderr. kinds are the key tables
// of the kinds the command may run (New).
func (f *Flags) Start(stderr io.Writer, kinds ...Names) (*Endpoint, error) {
	if f.Addr == "" {
		if f.Linger != 0 {
			return nil, clikit.WithCode(clikit.ExitUsage, fmt.Errorf("--metrics-linger needs --metrics-addr"))
		}
		return nil, nil
	}
	exp := New(clikit.Version, kinds...)
	srv, err := Listen(f.Addr, exp)
	if err != nil {
		return nil, clikit.WithCode(clikit.ExitUsage, err)
	}
	fmt.Fprintf(stderr, "firedrill: serving live metrics at %s\n", srv.URL())
	return &Endpoint{exp: exp, srv: srv, linger: f.Linger, stderr: stderr}, nil
}

// Exporter is what the command feeds (Start, Tick, Mark); nil on a nil
// endpoint.
func (e *Endpoint) Exporter() *Exporter {
	if e == nil {
		return nil
	}
	return e.exp
}

// Addr is the address the server listens on ("" on a nil endpoint).
func (e *Endpoint) Addr() string {
	if e == nil {
		return ""
	}
	return e.srv.Addr()
}

// Finish marks the run over (firedrill_run_finished 1).
func (e *Endpoint) Finish() {
	if e != nil {
		e.exp.Finish()
	}
}

// Stop keeps serving the final values for --metrics-linger (or until
// ctx ends: Ctrl-C), then stops the server.
func (e *Endpoint) Stop(ctx context.Context) {
	if e == nil {
		return
	}
	e.exp.Finish()
	if e.linger > 0 && ctx.Err() == nil {
		fmt.Fprintf(e.stderr, "firedrill: serving the final metrics at %s for %v (Ctrl-C ends it)\n", e.srv.URL(), e.linger)
		t := time.NewTimer(e.linger)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	if err := e.srv.Shutdown(); err != nil {
		fmt.Fprintf(e.stderr, "firedrill: stopping the metrics server: %v\n", err)
	}
}
