package testcert

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

// TestWrite checks the files chain as the servers and clients that use
// them expect: the server's certificate verifies for 127.0.0.1 and
// localhost against the CA and not against the other CA, the client's
// for client authentication against the CA, and each key pairs with its
// certificate.
func TestWrite(t *testing.T) {
	f, err := Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pool := func(path string) *x509.CertPool {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p := x509.NewCertPool()
		if !p.AppendCertsFromPEM(b) {
			t.Fatalf("%s: no certificate", path)
		}
		return p
	}
	leaf := func(cert, key string) *x509.Certificate {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatalf("%s with %s: %v", cert, key, err)
		}
		return pair.Leaf
	}
	ca, other := pool(f.CA), pool(f.OtherCA)
	server, client := leaf(f.Cert, f.Key), leaf(f.ClientCert, f.ClientKey)
	for _, name := range []string{"127.0.0.1", "::1", "localhost"} {
		if _, err := server.Verify(x509.VerifyOptions{Roots: ca, DNSName: name}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
	if _, err := server.Verify(x509.VerifyOptions{Roots: other, DNSName: "localhost"}); err == nil {
		t.Error("the other CA verifies the server's certificate")
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: ca, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: ca, DNSName: "localhost"}); err == nil {
		t.Error("the client certificate passes as a server's")
	}
}
