package mail_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tuxlab/internal/apitest"
	"tuxlab/internal/mail"
)

// TestSMTPSendsOverTLS sends through a real SMTP server (Mailpit) that
// requires STARTTLS, then one that requires TLS from the first byte (smtps),
// both with authentication: the mail arrives, so the client upgraded (or
// dialled TLS), trusted the server's certificate for its host and
// authenticated over the encrypted connection. A client that does not trust
// the certificate sends nothing.
func TestSMTPSendsOverTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, roots := selfSigned(t)
	for _, tt := range []struct {
		name     string
		flag     string
		implicit bool
	}{
		{"STARTTLS", "--smtp-require-starttls", false},
		{"smtps", "--smtp-require-tls", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mp := apitest.NewMailpit(t, false, "--smtp-tls-cert", certFile, "--smtp-tls-key", keyFile, tt.flag, "--smtp-auth-accept-any")
			server := mail.Server{Host: "127.0.0.1", Port: strconv.Itoa(mp.SMTPPort), Implicit: tt.implicit, Username: "tuxlab", Password: "secret"}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			data := "From: <noreply@tuxlab.org>\r\nTo: <ada@tuxlab.org>\r\nSubject: over " + tt.name + "\r\n\r\nhello\r\n"

			untrusting := &mail.SMTP{Server: server, TLS: &tls.Config{RootCAs: x509.NewCertPool()}}
			if err := untrusting.Send(ctx, "noreply@tuxlab.org", "ada@tuxlab.org", []byte(data)); err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("a client that does not trust the certificate: %v, want a certificate error", err)
			}
			c := &mail.SMTP{Server: server, TLS: &tls.Config{RootCAs: roots}}
			if err := c.Send(ctx, "noreply@tuxlab.org", "ada@tuxlab.org", []byte(data)); err != nil {
				t.Fatal(err)
			}
			if m := mp.WaitFor("ada@tuxlab.org"); m.Subject != "over "+tt.name || !strings.Contains(m.Text, "hello") {
				t.Fatalf("received %s: %q", m, m.Text)
			}
			if n := len(mp.Messages()); n != 1 {
				t.Fatalf("%d mails received, want 1", n)
			}
		})
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// them with a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tuxlab test SMTP"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}
