package mariadb_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	mdbtarget "github.com/firedrill/firedrill/db/mariadb/client"
	"github.com/firedrill/firedrill/db/mariadb/mdbdialect"
	"github.com/firedrill/firedrill/script"
)

// BenchmarkPointSelect runs one point select per iteration on one
// session: the per-query cost of the client (and a round trip), and its
// allocations (-benchmem: none on the hot path).
//
//	go test -run XXX -bench PointSelect -benchmem ./db/mariadb/client
//
// The -tls cases run the same over TLS (blocking reads through
// crypto/tls): slower by design; their one 24-byte allocation per query
// is crypto/tls's own (an atLeastReader in Conn.readFromUntil).
func BenchmarkPointSelect(b *testing.B) {
	for _, mode := range modes {
		for _, src := range []string{
			"SELECT v FROM kv WHERE k = :k;",
			"SELECT v FROM kv WHERE k = :k \\gset\n",
			"SELECT v FROM kv WHERE k = :k; -- tls",
		} {
			name := mode
			switch {
			case len(src) > 36:
				name += "-tls"
			case len(src) > 32:
				name += "-gset"
			}
			b.Run(name, func(b *testing.B) {
				cfg := baseConfig()
				cfg.Mode = mode
				if strings.HasSuffix(name, "-tls") {
					cfg.TLS = &tls.Config{InsecureSkipVerify: true}
				}
				target, err := mdbtarget.NewTarget(cfg)
				if err != nil {
					b.Fatal(err)
				}
				c, err := target.Connect(context.Background(), 0)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				syms := script.NewSymbols()
				s, err := script.ParseDialect("b.sql", []byte(src), syms, mdbdialect.Script())
				if err != nil {
					b.Fatal(err)
				}
				vars := script.NewVars(syms)
				k := syms.Ref("k")
				cmd := s.Commands[0]
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					vars.SetInt(k, int64(i%3+1))
					if err := c.Exec(context.Background(), cmd, vars); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
