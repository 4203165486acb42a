// Package testcert makes throwaway TLS certificates for tests that run a
// real server with TLS: a CA of its own, a server certificate it signs
// for 127.0.0.1, ::1 and localhost, a client certificate it signs, and an
// unrelated CA that signs nothing, written as PEM files a server's
// configuration can name.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the PEM files Write made.
type Files struct {
	CA   string // the CA's certificate: what a client trusts
	Cert string // the server's certificate, signed by the CA
	Key  string // the server's private key (PKCS #8)

	ClientCert string // a client certificate, signed by the CA
	ClientKey  string // its private key (PKCS #8)

	// OtherCA signs nothing Write made: a client trusting only it cannot
	// verify the server.
	OtherCA string
}

// Write makes the CA, the server and client certificates it signs and
// the other CA, valid for a day, and writes them into dir, readable by
// every user (a server started as root runs as another user; the keys
// guard nothing but a test).
func Write(dir string) (Files, error) {
	files := Files{
		CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "server-cert.pem"), Key: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client-cert.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
		OtherCA: filepath.Join(dir, "other-ca.pem"),
	}
	now := time.Now()
	// sign makes a key and a certificate from tmpl, signed by parent's
	// key (itself when parent is nil), and writes them to certPath and,
	// when not "", keyPath.
	sign := func(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", tmpl.Subject.CommonName, err)
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return nil, nil, err
		}
		if keyPath != "" {
			keyDER, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				return nil, nil, err
			}
			if err := writePEM(keyPath, "PRIVATE KEY", keyDER); err != nil {
				return nil, nil, err
			}
		}
		cert, err := x509.ParseCertificate(der)
		return cert, key, err
	}
	ca := func(name string) *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	}
	caCert, caKey, err := sign(ca("firedrill test CA"), nil, nil, files.CA, "")
	if err != nil {
		return Files{}, err
	}
	if _, _, err := sign(ca("firedrill test other CA"), nil, nil, files.OtherCA, ""); err != nil {
		return Files{}, err
	}
	server := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if _, _, err := sign(server, caCert, caKey, files.Cert, files.Key); err != nil {
		return Files{}, err
	}
	client := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "firedrill test client"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, _, err := sign(client, caCert, caKey, files.ClientCert, files.ClientKey); err != nil {
		return Files{}, err
	}
	return files, nil
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o644)
}
