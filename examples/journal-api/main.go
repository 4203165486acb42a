// Command journal-api runs, on its own, the journal feed service that
// examples/http-journal.yaml starts as an embedded service (embedded:
// journal-api): the code is db/http/instance/journalapi, which firedrill
// links. Run it to point firedrill at it as a real service
// (--dsn api=http://127.0.0.1:18931), or to try it by hand:
//
//	go run ./examples/journal-api -dsn postgres://app@127.0.0.1/journal
//
// It connects to the database named by -dsn (FIREDRILL_CONNSTRING, what
// a scenario's shell event is given for its target), listens on -addr
// (JOURNAL_API_ADDR), holds a pool of -pool connections
// (JOURNAL_API_POOL, default 8), bounds the requests handled at once by
// -workers (JOURNAL_API_WORKERS) and adds -render (JOURNAL_API_RENDER)
// to each; it exits at -until (a Unix time) or when the process that
// started it is gone, so that nothing outlives a run killed outright.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/firedrill/firedrill/db/http/instance/journalapi"
)

func main() {
	addr := flag.String("addr", envOr("JOURNAL_API_ADDR", "127.0.0.1:18931"), "address to listen on")
	dsn := flag.String("dsn", os.Getenv("FIREDRILL_CONNSTRING"), "the database's connection string")
	pool := flag.Int("pool", envInt("JOURNAL_API_POOL", journalapi.DefaultPool), "database connections")
	workers := flag.Int("workers", envInt("JOURNAL_API_WORKERS", 0), "requests handled at once, the rest queue (0: no limit)")
	render := flag.Duration("render", envDuration("JOURNAL_API_RENDER", 0), "time added to every request after its query")
	until := flag.Int64("until", 0, "stop at this Unix time, in seconds (0: run until stopped)")
	flag.Parse()
	if *dsn == "" {
		log.Fatal("journal-api: no database: set FIREDRILL_CONNSTRING or -dsn")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *until > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Unix(*until, 0))
		defer cancel()
	}
	ctx, orphaned := context.WithCancel(ctx)
	defer orphaned()
	go exitWithParent(ctx, orphaned)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("journal-api: listen on %s: %v", *addr, err)
	}
	cfg := journalapi.Config{DSN: *dsn, Pool: *pool, Workers: *workers, Render: *render, Log: os.Stderr}
	if err := journalapi.Serve(ctx, ln, cfg); err != nil {
		log.Fatal(err)
	}
}

// exitWithParent cancels the service once the process that started it is
// gone (it is then re-parented), so that nothing outlives a run that was
// killed without a chance to stop its events.
func exitWithParent(ctx context.Context, cancel context.CancelFunc) {
	parent := os.Getppid()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if os.Getppid() != parent {
				log.Printf("journal-api: parent %d gone, stopping", parent)
				cancel()
				return
			}
		}
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
