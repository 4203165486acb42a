package redistarget

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/firedrill/firedrill/db/redis/redisdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// TestEngineRuns drives the target through the engine, on its event loops
// and on goroutines, and checks on the server that every transaction's
// commands ran.
func TestEngineRuns(t *testing.T) {
	srv := startServer(t)
	src := `\set k random(1, 50)
SET key::k :client_id
GET key::k
\gset v
\startpipeline
INCR tx:count
INCRBY tx:sum :k
\endpipeline
`
	for _, mode := range []struct {
		name       string
		threads    int
		goroutines bool
	}{{"loop -j 1", 1, false}, {"loop -j 2", 2, false}, {"goroutines", 1, true}} {
		t.Run(mode.name, func(t *testing.T) {
			srv.do(t, "DEL", "tx:count")
			syms := script.NewSymbols()
			sc, err := script.ParseDialect("t.redis", []byte(src), syms, redisdialect.Script())
			if err != nil {
				t.Fatal(err)
			}
			target, err := NewTarget(Config{Network: "unix", Addr: srv.Socket(), AppName: "firedrill-engine-test"})
			if err != nil {
				t.Fatal(err)
			}
			const clients, txs = 6, 300
			res, err := engine.Run(context.Background(), target, engine.Config{
				Scripts: []*script.Script{sc}, Symbols: syms, Clients: clients, Transactions: txs, MaxTries: 1,
				Threads: mode.threads, Goroutines: mode.goroutines, PerCommand: true, Stderr: io.Discard, RandomSeed: 1,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Totals.Total.Count != clients*txs {
				t.Fatalf("%d transactions, want %d", res.Totals.Total.Count, clients*txs)
			}
			if got, want := srv.do(t, "GET", "tx:count"), fmt.Sprintf("$%d\r\n%d\r\n", len(fmt.Sprint(clients*txs)), clients*txs); got != want {
				t.Fatalf("tx:count = %q, want %q", got, want)
			}
			if cmds := res.Totals.Scripts[0].Commands; len(cmds) != len(sc.Commands) || cmds[1].Count != clients*txs {
				t.Fatalf("per-command stats: %+v", cmds)
			}
		})
	}
}

// TestEngineCountsErrorsByCode runs a script whose command fails with
// WRONGTYPE under ContinueOnError: the failures are counted by the
// reply's code, and a server that kills the sessions mid-run shows as
// connection errors that the clients recover from.
func TestEngineCountsErrorsByCode(t *testing.T) {
	srv := startServer(t)
	srv.do(t, "SET", "str", "x")
	syms := script.NewSymbols()
	sc, err := script.ParseDialect("t.redis", []byte("\\set n random(1, 4)\n\\if :n = 1\nLPUSH str x\n\\else\nINCR ok\n\\endif\n"), syms, redisdialect.Script())
	if err != nil {
		t.Fatal(err)
	}
	target, err := NewTarget(Config{Network: "unix", Addr: srv.Socket(), AppName: "victim"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = srv.try("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
	}()
	res, err := engine.Run(ctx, target, engine.Config{
		Scripts: []*script.Script{sc}, Symbols: syms, Clients: 4, Duration: 800 * time.Millisecond,
		ContinueOnError: true, Stderr: io.Discard, RandomSeed: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int64{}
	for _, e := range res.Errors {
		codes[e.Code] = e.Count
		if e.Code == "WRONGTYPE" && !strings.HasPrefix(e.Message, "WRONGTYPE Operation against a key") {
			t.Errorf("WRONGTYPE message %q", e.Message)
		}
	}
	if codes["WRONGTYPE"] == 0 || codes[engine.CodeConnection] == 0 {
		t.Fatalf("errors by code %v, want WRONGTYPE and %s", codes, engine.CodeConnection)
	}
	if res.Totals.Total.Count == 0 || res.Totals.Total.OtherFailures < codes["WRONGTYPE"] {
		t.Fatalf("%d succeeded, %d failed; errors %v", res.Totals.Total.Count, res.Totals.Total.OtherFailures, codes)
	}
}
