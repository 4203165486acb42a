package engine

import (
	"context"
	"testing"

	"github.com/firedrill/firedrill/script"
)

// memTarget is a fake engine.Target for the engine's own tests and
// benchmarks: its sessions answer every command at once, so that what is
// measured is the engine's own cost per transaction.
type memTarget struct{}

type memConn struct{}

func (memTarget) Connect(context.Context, int) (Conn, error)              { return memConn{}, nil }
func (memConn) Exec(context.Context, *script.Command, *script.Vars) error { return nil }
func (memConn) Reset(context.Context) error                               { return nil }
func (memConn) Interrupt(bool)                                            {}
func (memConn) Close() error                                              { return nil }

var _ Target = memTarget{}

// benchScript is a small read transaction: a random key and two commands.
const benchScript = "\\set id random(1, 100000)\nSELECT v FROM t WHERE id = :id;\nSELECT 1;\n"

// BenchmarkTransactions measures the engine's cost per transaction with a
// session that costs nothing (one client, no progress reporting): the
// hot path a workload without a fallback takes.
func BenchmarkTransactions(b *testing.B) {
	syms := script.NewSymbols()
	sc, err := script.Parse("bench.sql", []byte(benchScript), syms)
	if err != nil {
		b.Fatal(err)
	}
	sc.Weight = 1
	b.ReportAllocs()
	b.ResetTimer()
	res, err := Run(context.Background(), memTarget{}, Config{
		Scripts: []*script.Script{sc}, Symbols: syms, Clients: 1, Transactions: b.N, MaxTries: 1, Scale: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	if res.Totals.Total.Count != int64(b.N) {
		b.Fatalf("%d transactions, want %d", res.Totals.Total.Count, b.N)
	}
}
