package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// OperatorOU is the Subject organisational unit of an operator certificate:
// the role that may change a cluster's membership (issue 25). A member's
// certificate does not carry it, so a member cannot change membership.
const OperatorOU = "sextant-operator"

// ErrNotOperator is wrapped by errors about a certificate that is not an
// operator's.
var ErrNotOperator = errors.New("tlsutil: not an operator certificate")

// IssueOperator makes a client-only certificate for operator name (CN name,
// OU OperatorOU, no DNS name: it can never pass as a node id), signed by ca.
func (ca *CA) IssueOperator(name string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if name == "" || strings.ContainsAny(name, "/\\ \t\n") {
		return nil, nil, fmt.Errorf("tlsutil: operator name %q: want a non-empty name without spaces or slashes", name)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Sextant cluster"}, OrganizationalUnit: []string{OperatorOU}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsutil: issue operator %s: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// IsOperator reports whether cert is an operator certificate: OU
// OperatorOU, client authentication only, no DNS name. The caller must have
// verified its chain to the cluster CA (the TLS handshake does).
func IsOperator(cert *x509.Certificate) bool {
	return cert != nil && slices.Contains(cert.Subject.OrganizationalUnit, OperatorOU) &&
		cert.Subject.CommonName != "" && len(cert.DNSNames) == 0 &&
		slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
}

// OperatorName returns the name an operator certificate names, or an error
// wrapping ErrNotOperator.
func OperatorName(cert *x509.Certificate) (string, error) {
	if !IsOperator(cert) {
		return "", fmt.Errorf("%w: %q", ErrNotOperator, cert.Subject.CommonName)
	}
	return cert.Subject.CommonName, nil
}

// OperatorFiles names the files of operator name in a cluster directory:
// operator-<name>.pem and operator-<name>-key.pem.
func OperatorFiles(dir, name string) (certFile, keyFile string) {
	return filepath.Join(dir, "operator-"+name+".pem"), filepath.Join(dir, "operator-"+name+"-key.pem")
}

// WriteOperator issues a certificate for operator name with the CA in dir
// (ca.pem, ca-key.pem) and writes it with OperatorFiles (key 0600). It
// refuses to overwrite an existing one.
func WriteOperator(dir, name string, validity time.Duration) error {
	ca, err := LoadCA(filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		return err
	}
	certFile, keyFile := OperatorFiles(dir, name)
	if _, err := os.Stat(certFile); err == nil {
		return fmt.Errorf("tlsutil: %s exists; not overwriting", certFile)
	}
	if v := time.Until(ca.Cert.NotAfter); v < validity {
		validity = v
	}
	c, k, err := ca.IssueOperator(name, validity)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, k, 0o600); err != nil {
		return err
	}
	return os.WriteFile(certFile, c, 0o644)
}
