package mariadb_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"strings"
	"testing"

	mdbtarget "github.com/firedrill/firedrill/db/mariadb/client"
	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/db/mariadb/mdbdialect"
	"github.com/firedrill/firedrill/engine"
	"github.com/firedrill/firedrill/script"
)

// verified is a TLS configuration that trusts the test server's CA.
func verified(t *testing.T) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(server.certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in the test CA")
	}
	return &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
}

// sslCipher is the session's Ssl_cipher, read through the session.
func sslCipher(t *testing.T, c engine.Conn) string {
	t.Helper()
	syms := script.NewSymbols()
	vars := script.NewVars(syms)
	if err := execScript(c, "SHOW SESSION STATUS LIKE 'Ssl_cipher' \\gset ssl_\n", vars); err != nil {
		t.Fatal(err)
	}
	r, _ := syms.Lookup("ssl_Value")
	v, _ := vars.Text(r)
	return v
}

// A session with TLS runs scripts in both protocols encrypted (the
// server says which cipher), and an engine run with TLS falls back from
// the event loops to goroutines.
func TestTLSSession(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode string) {
		c := connect(t, mode, func(cfg *mdbtarget.Config) { cfg.TLS = verified(t) })
		if cipher := sslCipher(t, c); cipher == "" {
			t.Fatal("Ssl_cipher is empty: the session is not encrypted")
		}
		syms := script.NewSymbols()
		vars := script.NewVars(syms)
		vars.SetInt(syms.Ref("key"), 1)
		if err := execScript(c, "SELECT k, v FROM kv WHERE k = :key \\gset one_\n", vars); err != nil {
			t.Fatal(err)
		}
		if got := text(t, vars, "one_v"); got != "one" {
			t.Errorf("one_v = %q over TLS, want one", got)
		}
		// A result larger than one TLS record (16 KiB) and than the read buffer.
		if err := execScript(c, "SELECT REPEAT('x', 100000) AS big \\gset\n", vars); err != nil {
			t.Fatal(err)
		}
		if got := text(t, vars, "big"); len(got) != 100000 {
			t.Errorf("a 100000-byte value came back with %d bytes", len(got))
		}
		plain := connect(t, mode)
		if cipher := sslCipher(t, plain); cipher != "" {
			t.Errorf("a session without TLS has Ssl_cipher %q", cipher)
		}

		src := "\\set k random(1, 3)\nSELECT v FROM kv WHERE k = :k;\nBEGIN;\nUPDATE locked SET v = v + 1 WHERE id = :k - 1;\nCOMMIT;\n"
		s, err := script.ParseDialect("run.sql", []byte(src), syms, mdbdialect.Script())
		if err != nil {
			t.Fatal(err)
		}
		cfg := baseConfig()
		cfg.Mode, cfg.TLS = mode, verified(t)
		target, err := mdbtarget.NewTarget(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := engine.Run(context.Background(), target, engine.Config{
			Scripts: []*script.Script{s}, Symbols: syms, Clients: 3, Threads: 2, Transactions: 50, MaxTries: 10,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Totals.Total.Count != 150 {
			t.Errorf("%d transactions over TLS, want 150", res.Totals.Total.Count)
		}
	})
}

// Interrupts work on an encrypted session: KILL QUERY from a side
// session (itself encrypted), and a hard one that ends the session.
func TestTLSInterrupt(t *testing.T) {
	assertInterrupts(t, connect(t, mdbtarget.ModeSimple, func(cfg *mdbtarget.Config) { cfg.TLS = verified(t) }))
}

// connectErr opens a session with cfg changed by mutate and returns why
// it failed.
func connectErr(t *testing.T, mutate func(*mdbtarget.Config)) error {
	t.Helper()
	cfg := baseConfig()
	mutate(&cfg)
	target, err := mdbtarget.NewTarget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := target.Connect(context.Background(), 0)
	if err == nil {
		c.Close()
		t.Fatal("connected; want the connection refused")
	}
	return err
}

// A certificate that does not verify fails the session with an error
// that says which check failed and what to do.
func TestTLSVerificationFails(t *testing.T) {
	tests := []struct {
		name   string
		config func() *tls.Config
		want   []string
	}{
		// The system's roots do not hold the test CA.
		{"unknown authority", func() *tls.Config { return &tls.Config{ServerName: "127.0.0.1"} },
			[]string{server.addr, "ssl-ca=", "x509"}},
		{"name mismatch", func() *tls.Config { v := verified(t); v.ServerName = "db.example.com"; return v },
			[]string{server.addr, "not for the name", "127.0.0.1", "localhost"}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			err := connectErr(t, func(cfg *mdbtarget.Config) { cfg.TLS = test.config() })
			for _, w := range test.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			var dbe *engine.DBError
			if !errors.As(err, &dbe) || dbe.Code != engine.CodeConnect {
				t.Errorf("error %v is not a connect error", err)
			}
		})
	}
	// Without verification the same server is fine.
	c := connect(t, mdbtarget.ModeSimple, func(cfg *mdbtarget.Config) { cfg.TLS = &tls.Config{InsecureSkipVerify: true} })
	if sslCipher(t, c) == "" {
		t.Error("skip-verify: the session is not encrypted")
	}
}

// A server requiring TLS (require_secure_transport) refuses a session
// without it, with a hint to ask for TLS; a session with TLS gets in.
func TestTLSRequiredByTheServer(t *testing.T) {
	admin := connect(t, mdbtarget.ModeSimple, func(cfg *mdbtarget.Config) { cfg.Network, cfg.Addr = "unix", server.socket })
	if err := execScript(admin, "SET GLOBAL require_secure_transport = ON;", nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := execScript(admin, "SET GLOBAL require_secure_transport = OFF;", nil); err != nil {
			t.Errorf("turning require_secure_transport off again: %v", err)
		}
	})
	err := connectErr(t, func(*mdbtarget.Config) {})
	t.Logf("without TLS: %v", err) // MariaDB 10.11 answers 1045, access denied
	if !strings.Contains(err.Error(), "tls=true") || !strings.Contains(err.Error(), server.addr) {
		t.Errorf("error %q does not name the server and say to add tls=true", err)
	}
	c := connect(t, mdbtarget.ModeSimple, func(cfg *mdbtarget.Config) { cfg.TLS = verified(t) })
	if sslCipher(t, c) == "" {
		t.Error("the session is not encrypted")
	}
}

// Against a server without TLS, a session that must have it fails
// saying so; one that only prefers it (tls=preferred) goes on in plain.
func TestTLSServerWithout(t *testing.T) {
	inst, err := mdbinstance.Start(t.Context(), mdbinstance.Options{Settings: map[string]string{"skip_log_bin": ""}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	cfg := mdbtarget.Config{Addr: inst.TCPAddr(), User: inst.User(), Password: inst.Password(), Database: inst.Database(),
		TLS: &tls.Config{InsecureSkipVerify: true}}
	open := func(cfg mdbtarget.Config) (engine.Conn, error) {
		target, err := mdbtarget.NewTarget(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return target.Connect(context.Background(), 0)
	}
	if c, err := open(cfg); err == nil {
		c.Close()
		t.Error("a session that must have TLS connected to a server without it")
	} else if !errors.Is(err, mdbtarget.ErrNoTLS) || !strings.Contains(err.Error(), inst.TCPAddr()) || !strings.Contains(err.Error(), "tls=preferred") {
		t.Errorf("error %q: want ErrNoTLS naming the server, with a hint", err)
	}
	cfg.TLSOptional = true
	c, err := open(cfg)
	if err != nil {
		t.Fatalf("tls=preferred: %v", err)
	}
	defer c.Close()
	if cipher := sslCipher(t, c); cipher != "" {
		t.Errorf("Ssl_cipher %q on a server without TLS", cipher)
	}
	if err := execScript(c, "SELECT 1;", nil); err != nil {
		t.Fatal(err)
	}
}
