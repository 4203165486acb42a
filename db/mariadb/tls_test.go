package mariadb_test

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/firedrill/firedrill/backend"
	"github.com/firedrill/firedrill/backend/backendtest"
	mdbbackend "github.com/firedrill/firedrill/db/mariadb"
	mdbinstance "github.com/firedrill/firedrill/db/mariadb/instance"
	"github.com/firedrill/firedrill/db/mariadb/mariadbmetric"
	"github.com/firedrill/firedrill/internal/testcert"
	"github.com/firedrill/firedrill/kinds"
	"github.com/firedrill/firedrill/scenario"
	"github.com/firedrill/firedrill/timeline"
)

// A server that requires TLS (require_secure_transport=ON, a private CA):
// a run with ?tls=true&ssl-ca= works end to end — setup, the load target
// in both protocols, the samplers, an sql event — and a URL without TLS,
// or with TLS but not the CA, fails at once saying what to add.
func TestRunOnAServerRequiringTLS(t *testing.T) {
	t.Parallel()
	certDir, err := os.MkdirTemp("", "firedrill-mdbtls-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(certDir)
	if err := os.Chmod(certDir, 0o755); err != nil { // for the server's user
		t.Fatal(err)
	}
	certs, err := testcert.Write(certDir)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := mdbinstance.Start(t.Context(), mdbinstance.Options{Settings: map[string]string{
		"ssl_cert": certs.Cert, "ssl_key": certs.Key, "ssl_ca": certs.CA,
		"require_secure_transport": "ON",
		"skip_log_bin":             "",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()
	dsn := func(query string) string {
		return (&url.URL{Scheme: "mysql", User: url.UserPassword(inst.User(), inst.Password()), Host: inst.TCPAddr(),
			Path: "/shop", RawQuery: query}).String()
	}

	t.Run("refused", func(t *testing.T) {
		for _, test := range []struct{ query, want string }{
			{"", "add ?tls=true"},          // MariaDB: 1045, access denied
			{"tls=true", "ssl-ca="},        // the system's roots do not know the CA
			{"tls=false", "add ?tls=true"}, // as none
		} {
			src := "name: given\nduration: 1s\nworkloads:\n  - {name: w, clients: 1, scripts: [{inline: \"SELECT 1;\"}]}\n"
			sc, err := scenario.Parse("given.yaml", []byte(src), kinds.Registry().ScenarioOptionsFor(dsn(test.query)))
			if err != nil {
				t.Fatal(err)
			}
			tg, err := mdbbackend.Backend{}.Open(t.Context(), backend.Spec{Scenario: sc, DSN: dsn(test.query)})
			if err == nil {
				tg.Close(false)
				t.Errorf("?%s: connected to a server that requires TLS with its CA", test.query)
				continue
			}
			t.Logf("?%s: %v", test.query, err)
			for _, w := range []string{inst.TCPAddr(), test.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("?%s: error %q does not say %q", test.query, err, w)
				}
			}
			if strings.Contains(err.Error(), inst.Password()) {
				t.Errorf("?%s: the error shows the password", test.query)
			}
		}
	})

	src := `name: tls
duration: 3s
setup:
  sql:
    - "CREATE TABLE stock (id INT PRIMARY KEY, qty INT); INSERT INTO stock VALUES (1, 100000), (2, 100000)"
workloads:
  - name: simple
    clients: 2
    scripts:
      - inline: |
          \set id random(1, 2)
          UPDATE stock SET qty = qty - 1 WHERE id = :id;
          SHOW SESSION STATUS WHERE Variable_name = 'Ssl_cipher' AND Value <> '' \gset
  - name: prepared
    mode: prepared
    clients: 2
    scripts:
      - inline: |
          \set id random(1, 2)
          SELECT qty FROM stock WHERE id = :id;
events:
  - {kind: sql, at: 1s, sql: "UPDATE stock SET qty = 7 WHERE id = 2"}
`
	res, log := backendtest.RunOnGivenServer(t, src, dsn("tls=true&ssl-ca="+url.QueryEscape(certs.CA)), 0)
	run, err := timeline.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	tx := map[string]int64{}
	for _, iv := range run.Intervals {
		tx[iv.Workload] += iv.Count
		if iv.Failed > 0 { // simple's \gset fails on a session without TLS (no cipher, no row)
			t.Errorf("workload %s: %d failed at %.1fs", iv.Workload, iv.Failed, iv.Start)
		}
	}
	if tx["simple"] == 0 || tx["prepared"] == 0 {
		t.Errorf("transactions %v: both workloads should have run over TLS", tx)
	}
	statusSamples := 0
	for _, s := range run.Samples {
		if s.Source == mariadbmetric.GlobalStatus && s.Error == "" {
			statusSamples++
		}
	}
	if statusSamples == 0 {
		t.Error("no SHOW GLOBAL STATUS sample: the samplers did not read over TLS")
	}
	for _, m := range run.Marks {
		if m.Error != "" {
			t.Errorf("event %s: %s", m.Kind, m.Error)
		}
	}
	if strings.Contains(log, inst.Password()) || strings.Contains(res.Manifest.Target.Address, inst.Password()) {
		t.Error("the run shows the password")
	}
}
